"""treescore.score: the Column that scores a model inside a Spark query."""
import warnings
import weakref
from typing import Optional, Union

from pyspark.sql import Column, SparkSession

from treescore import _connect, wire
from treescore._jvm import active_jvm, java_column_seq
from treescore.errors import jvm_errors
from treescore.model import Model
from treescore.scorable import Scorable


ColumnOrName = Union[Column, str]

KINDS = wire.PREDICT_KINDS

_warned = weakref.WeakSet()  # the sessions already told that they score one row at a time


def _warn_if_row_at_a_time(jvm) -> None:
    """Warns once per session whose score calls run one row at a time: it lacks treescore's rules."""
    session = SparkSession.getActiveSession()
    if session is None or session in _warned:
        return
    extensions = jvm.treescore.TreescoreExtensions
    if not extensions.installedIn(session._jsparkSession):
        _warned.add(session)
        warnings.warn(extensions.missingMessage(), UserWarning, stacklevel=3)


def score(
    model: Union[Model, Scorable],
    *features: ColumnOrName,
    kind: str = "prediction",
    start_iteration: int = 0,
    num_iterations: Optional[int] = None,
) -> Column:
    """The model's output for each row, equal to lightgbm.Booster.predict bit for bit.

    Features: none (the columns named like the model's features are used), one column per
    feature in the model's order (names or Column expressions of any numeric or boolean type),
    or a single Spark ML Vector or array<float|double> column holding every feature. Nulls are
    missing values.

    kind: "prediction" (default; double, or array<double> for multiclass), "raw" (the raw
    score, same shape), "leaf" (array<int> of leaf indices) or "contrib" (array<double> of
    SHAP values, num_features + 1 per class). start_iteration and num_iterations select
    boosting iterations, as in Booster.predict.

    >>> df.withColumn("p", score(model))
    >>> df.withColumn("p", score(model, "age", F.col("income") / 1000))
    >>> df.withColumn("shap", score(model, "features", kind="contrib"))

    `model` may also be an Ensemble, Routed, Cascade, Grid or a loaded spec (see
    treescore.ensembles); those read their inputs by column name and take kind "prediction"
    or "contrib". Their contributions are exact SHAP values in the raw (link) space: one per
    input (the scorer's inputs in first-use order, as describe() lists them) then the expected
    value, per row, or per grid point for a grid. A weighted sum or mean gives its members'
    weighted sum or mean, a route its chosen scorer's, a cascade the answering stage's; an
    outermost transform is left out. min, max, median, clip, monotone curves and transformed
    members of an ensemble (a binary model's probability: use Member(model, raw=True)) are
    refused, naming why.

    On a Spark Connect client the call is built from SQL functions registered on the server
    (see treescore._connect); the scores are the same.
    """
    if isinstance(model, Scorable):
        if features or start_iteration or num_iterations:
            raise ValueError("treescore: ensembles, routes, cascades and grids read their inputs by column name "
                             "and score all iterations; pass no columns or iterations")
        if kind not in ("prediction", "contrib"):
            raise ValueError(f"treescore: ensembles, routes, cascades and grids score kind 'prediction' or 'contrib', "
                             f"not '{kind}'")
        if _connect.active_connect_session() is not None:
            return _connect.score_scorable(model, kind)
        jvm = active_jvm()
        _warn_if_row_at_a_time(jvm)
        with jvm_errors():
            options = jvm.treescore.ScoreOptions(kind, 0, -1)
            return Column(jvm.treescore.functions.score(model._java(), options))
    if kind not in KINDS:
        raise ValueError(f"treescore: unknown score kind '{kind}'; expected one of {', '.join(KINDS)}")
    if len(features) == 1 and isinstance(features[0], (list, tuple)):
        features = tuple(features[0])
    if not isinstance(model, Model):
        raise TypeError(f"treescore: score takes a Model or a scorer, got {type(model).__name__}")
    if model._is_connect:
        return _connect.score_model(model, features, kind, start_iteration, num_iterations)
    jvm = active_jvm()
    _warn_if_row_at_a_time(jvm)
    with jvm_errors():
        options = jvm.treescore.ScoreOptions(kind, start_iteration, num_iterations or -1)
    java_columns = java_column_seq(features)
    with jvm_errors():
        return Column(jvm.treescore.functions.score(model._java_model, options, java_columns))
