"""Named models for SQL: treescore.register(spark, "demand_v3", model), then
SELECT treescore_score('demand_v3', f1, f2, ...) FROM t (see docs/sql-and-connect.md)."""
from typing import List, Union

from treescore import _connect
from treescore._jvm import active_jvm
from treescore.errors import jvm_errors
from treescore.model import Model


def register(spark, name: str, model: "Union[Model, str, object]") -> None:
    """Makes `model` scorable from SQL by `name` in this session.

    `model` is a Model, any scorer (Ensemble, Routed, Cascade, Grid, a loaded spec), or the
    path of a model file, MLflow LightGBM model directory or saved scorer folder, read now so that
    a bad path fails here.

    On Spark Connect the server must read the model itself: register a path, a Model.load(path)
    or a treescore.load(path); it is set in the session's conf as spark.treescore.model.<name>,
    which is also how plain SQL registers one (SET spark.treescore.model.<name> = <path>).

    >>> treescore.register(spark, "demand_v3", treescore.Model.load("/models/demand_v3.txt"))
    >>> spark.sql("SELECT treescore_score('demand_v3', price, discount) FROM sales")
    """
    from treescore.ensembles import Scorable

    if _connect.is_connect(spark):
        path = model if isinstance(model, str) else getattr(model, "_path", None)
        if path is None:
            raise ValueError("treescore: on Spark Connect, register a model by a path the server can read "
                             "(a path, Model.load(path) or treescore.load(path)); in-memory models can be "
                             "scored with treescore.score but not registered by name")
        _connect.register(spark, name, path)
        return
    registry = active_jvm().treescore.sql.ModelRegistry
    session = spark._jsparkSession
    with jvm_errors():
        if isinstance(model, str):
            registry.registerPath(session, name, model)
        elif isinstance(model, Model):
            registry.register(session, name, model._java_model)
        elif isinstance(model, Scorable):
            registry.register(session, name, model._java())
        else:
            raise TypeError(f"treescore: register takes a Model, a scorer or a path, got {type(model).__name__}")


def registered(spark) -> List[str]:
    """The names this session can score from SQL (classic API)."""
    return list(active_jvm().treescore.sql.ModelRegistry.namesArray(spark._jsparkSession))
