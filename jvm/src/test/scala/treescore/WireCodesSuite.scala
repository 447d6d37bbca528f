package treescore

import org.scalatest.funsuite.AnyFunSuite

import treescore.ensemble.{Combine, OutputTransform}
import treescore.model.{Engine, PredictKind}
import treescore.nativelib.{NativeLoader, NativeMethods}
import treescore.wire.WireCodes

/** The codes the JVM, native code and Python share come from wire/codes.txt alone. */
class WireCodesSuite extends AnyFunSuite {

  private def assertCovers(group: String, names: Seq[String], objects: Seq[(Int, String)]): Unit = {
    assert(objects.map(_._1) == names.indices, s"$group: a code of wire/codes.txt has no Scala object")
    assert(objects.map(_._2) == names, s"$group: a Scala object's name differs from wire/codes.txt")
  }

  test("every code of every group has its Scala object, named as users write it") {
    assertCovers("Combine", WireCodes.Combine.names, Combine.all.map(c => c.code -> c.name))
    assertCovers("EnsembleTransform", WireCodes.EnsembleTransform.names,
      WireCodes.EnsembleTransform.names.map(OutputTransform.fromName(_, 0.0, 1.0)).map(t => t.code -> t.name))
    assertCovers("PredictKind", WireCodes.PredictKind.names, PredictKind.all.map(k => k.code -> k.name))
    assertCovers("Engine", WireCodes.Engine.names, Engine.all.map(e => e.code -> e.name))
  }

  test("native code reads the same codes: it refuses the first code past a group's last") {
    NativeLoader.ensureLoaded()
    val pastEngines = WireCodes.Engine.names.length
    val e = intercept[IllegalArgumentException](NativeMethods.loadModel("tree\n".getBytes, pastEngines, 0L))
    assert(e.getMessage.contains(s"unknown engine code $pastEngines"), e.getMessage)
  }
}
