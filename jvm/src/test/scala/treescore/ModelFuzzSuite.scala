package treescore

import java.nio.charset.StandardCharsets
import java.nio.file.Files
import java.util.concurrent.TimeUnit

import scala.io.Source

import org.scalatest.funsuite.AnyFunSuite

import treescore.model.{InvalidModelException, TreeModel}

/**
 * Fuzzes the model-text loader: thousands of damaged copies of real models (truncations,
 * byte flips, dropped, duplicated and swapped lines, corrupted numbers). Each copy must be
 * refused by treescore's validation or load and score in both engines without crashing. The
 * survivors are loaded in a child JVM, so a native crash fails this test instead of killing
 * the test JVM, and the child's log names the file that crashed it.
 */
class ModelFuzzSuite extends AnyFunSuite {

  private val cases = 3000

  private def fixture(name: String): String = {
    val source = Source.fromResource(s"fixtures/$name.txt")
    try source.mkString finally source.close()
  }

  private def mutate(text: String, rng: scala.util.Random): String = {
    val lines = text.split("\n", -1).toBuffer
    def line = rng.nextInt(lines.length)
    rng.nextInt(7) match {
      case 0 => text.take(rng.nextInt(text.length)) // truncation: an interrupted copy
      case 1 => // byte flips
        val bytes = text.getBytes(StandardCharsets.ISO_8859_1)
        (0 until 1 + rng.nextInt(4)).foreach { _ => val i = rng.nextInt(bytes.length); bytes(i) = (bytes(i) ^ (1 << rng.nextInt(8))).toByte }
        new String(bytes, StandardCharsets.ISO_8859_1)
      case 2 => lines.remove(line); lines.mkString("\n")
      case 3 => val i = line; lines.insert(i, lines(i)); lines.mkString("\n")
      case 4 => val (i, j) = (line, line); val t = lines(i); lines(i) = lines(j); lines(j) = t; lines.mkString("\n")
      case 5 => // a corrupted number
        val digits = "[0-9]+".r.findAllMatchIn(text).toIndexedSeq
        val m = digits(rng.nextInt(digits.length))
        text.substring(0, m.start) + Seq("0", "-1", "999999", "1e308", "nan", "2147483648")(rng.nextInt(6)) + text.substring(m.end)
      case _ => // a digit changed in place: the quietest damage
        val positions = text.indices.filter(i => text(i).isDigit)
        val i = positions(rng.nextInt(positions.length))
        text.updated(i, ('0' + rng.nextInt(10)).toChar)
    }
  }

  test(s"$cases damaged models are refused by validation or load and score without crashing either engine") {
    val folder = Files.createTempDirectory("treescore-fuzz-")
    val rng = new scala.util.Random(20261129)
    val originals = Seq(fixture("regression"), fixture("binary"), fixture("linear"))
    var refused = 0
    var accepted = 0
    (0 until cases).foreach { n =>
      val damaged = mutate(originals(n % originals.length), rng)
      try {
        TreeModel.fromString(damaged)
        Files.write(folder.resolve(f"case-$n%05d.txt"), damaged.getBytes(StandardCharsets.UTF_8))
        accepted += 1
      } catch { case _: InvalidModelException => refused += 1 }
    }
    val java = sys.props("java.home") + "/bin/java"
    val child = new ProcessBuilder(java, "-Xmx1g", "-cp", sys.props("java.class.path"), "treescore.FuzzLoader", folder.toString)
      .redirectErrorStream(true).start()
    val log = Source.fromInputStream(child.getInputStream).getLines().toVector
    assert(child.waitFor(5, TimeUnit.MINUTES), "the child JVM hung")
    val last = log.reverseIterator.find(_.startsWith("loading")).getOrElse("")
    assert(child.exitValue() == 0, s"a native engine crashed the child JVM (exit ${child.exitValue()}) at '$last':\n${log.takeRight(20).mkString("\n")}")
    val done = log.find(_.startsWith("done")).getOrElse(fail(s"no summary:\n${log.takeRight(20).mkString("\n")}"))
    println(s"model fuzz: $cases cases, $refused refused by treescore's validation, $accepted passed it; child: $done")
    assert(refused + accepted == cases)
    assert(refused > cases / 2, "most damage must be caught before LightGBM")
    log.filter(_.startsWith("loading")).map(_.stripPrefix("loading ").takeWhile(_ != ' ')).distinct
      .foreach(f => Files.delete(folder.resolve(f)))
    Files.delete(folder)
  }
}
