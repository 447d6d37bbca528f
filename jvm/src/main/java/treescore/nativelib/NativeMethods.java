package treescore.nativelib;

/**
 * Every native method treescore has, in one place. The C++ side binds them by
 * RegisterNatives (native/jni/native_methods.cpp), so the two lists must agree.
 *
 * <p>Models live in native code behind opaque handles. A handle is released exactly once, by
 * its owner ({@link treescore.nativelib.NativeModel}); using a released handle throws
 * IllegalStateException rather than touching freed memory. Errors from LightGBM arrive as
 * {@link NativeException} with LightGBM's own message.
 *
 * <p>The first use of this class loads the native libraries, so no caller can reach a native
 * method before they are bound.
 */
public final class NativeMethods {
  static {
    NativeLoader.ensureLoaded();
  }

  private NativeMethods() {}

  /**
   * Parses a LightGBM text model (UTF-8 bytes) into an engine (0 LightGBM's predictor, 1
   * treescore's exact engine) and returns a handle to it. treescore's engine keeps at most
   * maxTableAddends addends in its TreeSHAP tables (8 bytes each; WireLimits caps it too).
   */
  public static native long loadModel(byte[] modelText, int engine, long maxTableAddends);

  /** Frees the model behind a handle once no call is using it any more. */
  public static native void releaseModel(long handle);

  /**
   * Bytes of native memory the model holds: what loading it kept, and what it built since for
   * the calls made with it (TreeSHAP tables, iteration range slices).
   */
  public static native long modelHeldBytes(long handle);

  /**
   * The most native working memory one call with the model holds per thread, beside its
   * batch's buffers: WireLimits.TaskWorkingMemoryBytes, or more for a model that needs more.
   */
  public static native long modelWorkingBytes(long handle);

  /** The number of features the model expects per row. */
  public static native int numFeatures(long handle);

  /** The number of classes (1 for regression, binary and ranking). */
  public static native int numClasses(long handle);

  /**
   * How many doubles one row yields for a prediction kind (0 prediction, 1 raw, 2 leaf,
   * 3 contrib) and iteration range (numIterations <= 0 means all).
   */
  public static native long outputsPerRow(long handle, int kind, int startIteration, int numIterations);

  /**
   * Scores numRows rows of numCols features: columnsAddress is off-heap memory holding numCols
   * addresses, each that of its column's value in row 0, rows rowStride doubles apart (see
   * treescore.nativelib.FeatureColumns, which checks that every column holds numRows values).
   * Writes outputsPerRow doubles per row at outAddress (off-heap, outCapacity doubles).
   * numThreads is the most threads this call may use.
   */
  public static native void predict(
      long handle,
      long columnsAddress,
      int numCols,
      long rowStride,
      int numRows,
      int kind,
      int startIteration,
      int numIterations,
      int numThreads,
      long outAddress,
      long outCapacity);

  /**
   * Builds an ensemble program (models and combinators, see native/src/program.h for the
   * encoding) over loaded models; the program holds its models until released.
   */
  public static native long compileProgram(long[] code, double[] constants, long[] modelHandles);

  /** Frees a program once no call is using it. */
  public static native void releaseProgram(long handle);

  /**
   * Evaluates a program over numRows rows, writing one double per row. Every gridPoints
   * consecutive rows are one base row's what-if grid (gridPoints is 1 without a grid): the
   * inputs (numCols columns, addressed as for predict) hold the numRows / gridPoints base rows, and the
   * inputs listed in gridInputs take each point's own value from the grid values (off-heap,
   * numRows x gridInputs.length; 0 address when there are none). Route indices are off-heap
   * int32, numRows x route slots (0 address when there are none). monotone 1 (running max),
   * -1 (running min) or 0 applies along each run of monotoneRun points. With contributions,
   * each row gets its SHAP values instead, numCols + 1 doubles (see Program::EvaluateContributions;
   * monotone must be 0). Returns how many rows a cascade escalated.
   */
  public static native long evaluateProgram(
      long handle,
      long columnsAddress,
      int numCols,
      long rowStride,
      int numRows,
      long routeAddress,
      long routeCapacity,
      int numThreads,
      int gridPoints,
      int[] gridInputs,
      long gridValuesAddress,
      long gridValuesCapacity,
      int monotone,
      int monotoneRun,
      boolean contributions,
      long outAddress,
      long outCapacity);

  /**
   * Opens one task's exact top-K selection over a model loaded into treescore's engine: per
   * group the k best (largest when descending) predictions (kind 0) or raw scores (kind 1) of
   * the iterations given, and every row tying with the k-th. The scan keeps the model alive
   * until released.
   */
  public static native long openTopK(long modelHandle, int kind, int startIteration, int numIterations, int k,
      boolean descending);

  /**
   * Opens one task's exact top-K selection over a compiled ensemble program (a weighted
   * ensemble of models on treescore's engine, weights of 0 or more): per group the k best of
   * its scores, and every row tying with the k-th. The scan keeps the program alive until released.
   */
  public static native long openTopKProgram(long programHandle, int k, boolean descending);

  /** Frees a top-K scan. */
  public static native void releaseTopK(long handle);

  /**
   * Scores what top-K selection needs of numRows rows (addressed as for predict): sets the int32
   * kept[r] to 1 for each row that may be in its group's top k and the double scores[r] to its
   * exact score, and kept[r] to 0 for the others. groupsAddress is 0 for one group, else numRows
   * int32 group numbers (0 or more). floor (one group only; -infinity for none) is a key that k
   * rows kept by other scans of the same query reach: rows below it are dropped too.
   * routesAddress is 0 for a scan without routes, else numRows x the program's route slots int32
   * route indices (as for evaluateProgram). Returns the rows kept. capacity: rows the buffers hold.
   */
  public static native int selectTopK(long handle, long columnsAddress, int numCols, long rowStride, int numRows,
      long groupsAddress, long routesAddress, double floor, long keptAddress, long scoresAddress, long capacity);

  /** A one-group top-K scan's best keys so far (at most k, in no order). */
  public static native double[] topKBestKeys(long handle);

  /** A top-K scan's tree evaluations so far, and how many full scores of the same rows make: {done, full}. */
  public static native long[] topKTreeCounts(long handle);

  /** Bytes in use from the C allocator (glibc's mallinfo2, or mallinfo before glibc 2.33), or -1 where unknown; for leak checks. */
  public static native long allocatorInUseBytes();

  /**
   * The native memory account: bytes held per kind (wire/codes.txt's NativeMemory, in code
   * order), then the most held at once in total since the library was loaded.
   */
  public static native long[] nativeMemoryHeld();

  /**
   * The most native memory held in total that the calling thread's allocations saw since its
   * last call, or the total now if more; starts the next watch.
   */
  public static native long takeThreadPeak();

  /** Allocates an off-heap buffer of `bytes` bytes, counted by the account; throws OutOfMemoryError. */
  public static native long allocateBuffer(long bytes);

  /** Frees a buffer allocateBuffer returned (0 is ignored). */
  public static native void freeBuffer(long address);

  /** How many models are loaded in native memory right now (for leak checks). */
  public static native long liveModelCount();
}
