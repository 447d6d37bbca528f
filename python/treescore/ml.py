"""treescore as a Spark ML stage: ScoreTransformer adds a column of scores inside a Pipeline.

    from pyspark.ml import Pipeline, PipelineModel
    from pyspark.ml.feature import VectorAssembler
    from treescore.ml import ScoreTransformer

    assembler = VectorAssembler(inputCols=["age", "income"], outputCol="features")
    stage = ScoreTransformer(treescore.Model.load("/models/churn.txt"), featuresCol="features", outputCol="p")
    Pipeline(stages=[assembler, stage]).fit(df).write().save("/pipelines/churn")
    PipelineModel.load("/pipelines/churn").transform(df)

The stage wraps the JVM class treescore.ml.ScoreTransformer, which does the work and the
persistence: a Pipeline saved from Python loads in Scala and the other way round.
"""
from typing import List, Optional, Union

from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.util import JavaMLReadable, JavaMLWritable
from pyspark.ml.wrapper import JavaTransformer

from treescore.ensembles import Scorable
from treescore.errors import jvm_errors
from treescore.functions import KINDS
from treescore.model import Model

_JAVA_CLASS = "treescore.ml.ScoreTransformer"


class ScoreTransformer(JavaTransformer, JavaMLReadable, JavaMLWritable):
    """Adds `outputCol` with the scores of a Model, Ensemble, Routed, Cascade or Grid.

    A Model reads `featuresCol` (one vector or array column, e.g. VectorAssembler's output),
    or `inputCols` (one column per feature, in the model's order), or, with neither, the
    columns named like its features; `kind`, `startIteration` and `numIterations` work as in
    treescore.score. Ensembles, routes, cascades and grids read their inputs by the column
    names in their spec and return predictions (a grid: array<double>), so they take neither.

    >>> ScoreTransformer(model, featuresCol="features", outputCol="p", kind="contrib")
    >>> ScoreTransformer(treescore.Routed("market", {"DE": de_model}, default=model), outputCol="units")
    """

    inputCols = Param(Params._dummy(), "inputCols",
                      "feature columns, one per model feature in the model's order "
                      "(default: columns named like the model's features)",
                      typeConverter=TypeConverters.toListString)
    featuresCol = Param(Params._dummy(), "featuresCol",
                        "one vector or array<float|double> column holding every feature (instead of inputCols)",
                        typeConverter=TypeConverters.toString)
    outputCol = Param(Params._dummy(), "outputCol", "the output column", typeConverter=TypeConverters.toString)
    kind = Param(Params._dummy(), "kind", f"what a model returns: {', '.join(KINDS)}",
                 typeConverter=TypeConverters.toString)
    startIteration = Param(Params._dummy(), "startIteration", "the first boosting iteration used (model only)",
                           typeConverter=TypeConverters.toInt)
    numIterations = Param(Params._dummy(), "numIterations",
                          "how many boosting iterations from startIteration; -1 or 0 means all (model only)",
                          typeConverter=TypeConverters.toInt)

    def __init__(self, scorer: Optional[Union[Model, Scorable]] = None, *, inputCols: Optional[List[str]] = None,
                 featuresCol: Optional[str] = None, outputCol: Optional[str] = None, kind: Optional[str] = None,
                 startIteration: Optional[int] = None, numIterations: Optional[int] = None):
        super().__init__()
        # The same defaults as the JVM class, which Python's defaults overwrite when params move over.
        self._setDefault(outputCol="score", kind="prediction", startIteration=0, numIterations=-1)
        if kind is not None and kind not in KINDS:
            raise ValueError(f"treescore: unknown score kind '{kind}'; expected one of {', '.join(KINDS)}")
        # Without a scorer this is an empty shell that JavaParams._from_java fills when loading.
        if scorer is not None:
            with jvm_errors():
                self._java_obj = self._new_java_obj(_JAVA_CLASS, self.uid, _java_scorer(scorer))
        given = dict(inputCols=inputCols, featuresCol=featuresCol, outputCol=outputCol, kind=kind,
                     startIteration=startIteration, numIterations=numIterations)
        self._set(**{name: value for name, value in given.items() if value is not None})

    def setInputCols(self, value: List[str]) -> "ScoreTransformer":
        return self._set(inputCols=value)

    def setFeaturesCol(self, value: str) -> "ScoreTransformer":
        return self._set(featuresCol=value)

    def setOutputCol(self, value: str) -> "ScoreTransformer":
        return self._set(outputCol=value)

    def setKind(self, value: str) -> "ScoreTransformer":
        if value not in KINDS:
            raise ValueError(f"treescore: unknown score kind '{value}'; expected one of {', '.join(KINDS)}")
        return self._set(kind=value)

    def setStartIteration(self, value: int) -> "ScoreTransformer":
        return self._set(startIteration=value)

    def setNumIterations(self, value: int) -> "ScoreTransformer":
        return self._set(numIterations=value)

    def getInputCols(self) -> List[str]:
        return self.getOrDefault(self.inputCols)

    def getFeaturesCol(self) -> str:
        return self.getOrDefault(self.featuresCol)

    def getOutputCol(self) -> str:
        return self.getOrDefault(self.outputCol)

    def getKind(self) -> str:
        return self.getOrDefault(self.kind)

    def getStartIteration(self) -> int:
        return self.getOrDefault(self.startIteration)

    def getNumIterations(self) -> int:
        return self.getOrDefault(self.numIterations)

    def describe(self) -> str:
        """What the stage scores, e.g. 'model(3f1c2a...)' or 'route(market: DE -> ...)'."""
        return self._java_stage().describe()

    def _transform(self, dataset):
        self._java_stage()
        with jvm_errors():
            return super()._transform(dataset)

    def _java_stage(self):
        if self._java_obj is None:
            raise ValueError("treescore: this ScoreTransformer has no model or scorer; construct it with one, "
                             "e.g. ScoreTransformer(treescore.Model.load(path)), or load a saved stage")
        return self._java_obj


def _java_scorer(scorer: Union[Model, Scorable]):
    if isinstance(scorer, Model):
        return scorer._java_model
    if isinstance(scorer, Scorable):
        return scorer._java()
    raise TypeError(f"treescore: ScoreTransformer scores a Model, Ensemble, Routed, Cascade, Grid or loaded "
                    f"scorer, got {type(scorer).__name__}")
