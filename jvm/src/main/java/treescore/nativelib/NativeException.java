package treescore.nativelib;

/** An error raised inside treescore's native code or by LightGBM, carried across JNI. */
public final class NativeException extends RuntimeException {
  public NativeException(String message) {
    super(message);
  }
}
