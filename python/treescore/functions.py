"""treescore.score: the Column that scores a model inside a Spark query."""
from typing import Union

from pyspark import SparkContext
from pyspark.sql import Column
from pyspark.sql.classic.column import _to_java_column, _to_seq

from treescore._jvm import active_jvm
from treescore.model import Model

ColumnOrName = Union[Column, str]


def score(model: Model, *features: ColumnOrName) -> Column:
    """The model's prediction, as lightgbm.Booster.predict returns it, for each row.

    With no features, the columns named like the model's features are used. Otherwise give one
    column (name or Column expression) per model feature, in the model's order. Any numeric or
    boolean column works; nulls are missing values.

    >>> df.withColumn("p", score(model))
    >>> df.withColumn("p", score(model, "age", F.col("income") / 1000))
    """
    if len(features) == 1 and isinstance(features[0], (list, tuple)):
        features = tuple(features[0])
    jvm = active_jvm()
    if not features:
        return Column(jvm.treescore.functions.score(model._java_model))
    java_columns = [_to_java_column(f) for f in features]
    return Column(jvm.treescore.functions.score(model._java_model, _to_seq(SparkContext._active_spark_context, java_columns)))
