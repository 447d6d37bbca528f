package treescore.nativelib

import treescore.wire.WireCodes

/**
 * What treescore's native library holds in this JVM, from its one account (native/src/memory):
 * every allocation of its C++ code and of LightGBM's, and the task buffers the JVM asks it for,
 * each counted when made and when freed.
 */
object NativeMemory {

  /** Bytes held now per kind (wire/codes.txt's NativeMemory names), and the most ever held at once. */
  final case class Held(byKind: Map[String, Long], peak: Long) {
    def total: Long = byKind.valuesIterator.sum
    def apply(kind: String): Long = byKind(kind)
  }

  /** Reads the account; loads the native library if no call has yet. */
  def held(): Held = {
    NativeLoader.ensureLoaded()
    val values = NativeMethods.nativeMemoryHeld()
    val kinds = WireCodes.NativeMemory.names
    require(values.length == kinds.length + 1, s"the native library reports ${values.length - 1} kinds, not ${kinds.length}")
    Held(kinds.zip(values).toMap, values(kinds.length))
  }

  /** The account where the library is loaded; nothing held where no call has loaded it yet. */
  def heldIfLoaded(): Held =
    if (NativeLoader.isLoaded) held() else Held(WireCodes.NativeMemory.names.map(_ -> 0L).toMap, 0L)
}
