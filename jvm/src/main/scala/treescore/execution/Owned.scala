package treescore.execution

import scala.collection.mutable

/**
 * The resources an object acquires while it is built (leases, off-heap buffers, native
 * handles), each registered as it is acquired. If building fails part way, [[unwind]] releases
 * what was acquired so far, newest first; once built, the object's close() does the same.
 */
private[execution] final class Owned extends AutoCloseable {
  private val held = mutable.ArrayBuffer.empty[AutoCloseable]

  /** Registers a resource just acquired and returns it. */
  def apply[T <: AutoCloseable](resource: T): T = { held += resource; resource }

  /** Releases everything held, newest first; the first failure is rethrown after all were tried. */
  override def close(): Unit = {
    var failure: Throwable = null
    held.reverseIterator.foreach { r =>
      try r.close() catch { case e: Throwable => if (failure == null) failure = e else failure.addSuppressed(e) }
    }
    held.clear()
    if (failure != null) throw failure
  }
}

private[execution] object Owned {
  /** Runs `build` with a fresh Owned; if it throws, releases what it acquired and rethrows. */
  def building[T](build: Owned => T): T = {
    val owned = new Owned
    try build(owned)
    catch {
      case e: Throwable =>
        try owned.close() catch { case suppressed: Throwable => e.addSuppressed(suppressed) }
        throw e
    }
  }
}
