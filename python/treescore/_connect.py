"""Spark Connect: treescore's calls built from the SQL functions its extensions register on
the server (treescore_score_model, treescore_score_spec, treescore_describe), so nothing
here needs py4j or a JVM on the client.

A model reaches the server either by path (Model.load: the server reads the file, as it reads
any data path) or as its text in the query (Model.from_string / from_booster). The server
checks and caches it at analysis time and builds the same expression as the classic API.
"""
import json
from typing import Dict, List, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

CONF_PREFIX = "spark.treescore.model."


def is_connect(session) -> bool:
    """Whether `session` is a Spark Connect session (checked by module, so classic installs
    without Connect's gRPC dependencies never import it)."""
    return session is not None and type(session).__module__.startswith("pyspark.sql.connect")


def require_server_extensions(session) -> None:
    """Raises unless the Connect server of `session` has treescore's extensions: a client cannot
    give them to a server, which takes them only when it starts."""
    if not session.catalog.functionExists("treescore_score_model"):
        raise RuntimeError(
            "treescore: this Spark Connect server does not have treescore's extensions, and a client cannot add "
            "them. Start the server with treescore's jar (--packages io.github.treescore:treescore-spark_<line>_"
            "<scala>:<version>, or --jars with treescore.jar_path() of a full pyspark install) and "
            "--conf spark.sql.extensions=treescore.TreescoreExtensions.")


def active_connect_session():
    """The active Spark Connect session, or None when there is none (or it is classic)."""
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    return session if is_connect(session) else None


def _model_literal(model) -> Column:
    if model._path is not None:
        return F.lit(model._path)
    return F.lit(bytearray(model._text.encode("utf-8")))


def _columns(features) -> List[Column]:
    return [F.col(f) if isinstance(f, str) else f for f in features]


def _options(kind: str, start_iteration: int = 0, num_iterations=None) -> List[Column]:
    """The SQL functions' options map for what differs from the defaults; none when nothing does."""
    options = {}
    if kind != "prediction":
        options["kind"] = kind
    if start_iteration:
        options["start_iteration"] = str(int(start_iteration))
    if num_iterations:
        options["num_iterations"] = str(int(num_iterations))
    return [F.create_map(*[F.lit(part) for item in options.items() for part in item])] if options else []


def score_model(model, features: Sequence, kind: str, start_iteration: int, num_iterations) -> Column:
    return F.call_function("treescore_score_model", _model_literal(model),
                           *_options(kind, start_iteration, num_iterations), *_columns(features))


def score_scorable(scorable, kind: str = "prediction") -> Column:
    """An Ensemble, Routed, Cascade or Grid as its JSON spec plus the texts of its in-memory
    models; models loaded by path are named by path in the spec and read by the server."""
    options = _options(kind)
    path = getattr(scorable, "_path", None)
    if path is not None:
        return F.call_function("treescore_score_model", F.lit(path), *options)
    models: Dict[str, object] = {}
    spec = json.dumps({"treescore_spec": 1, "scorer": scorable._node(models)})
    texts = [F.lit(bytearray(m._text.encode("utf-8"))) for m in models.values()]
    return F.call_function("treescore_score_spec", F.lit(spec), *options, *texts)


def feature_names(session, model) -> List[str]:
    """The model's feature names, as the server's own model checks read them."""
    if session is None:
        raise RuntimeError("treescore: a Spark Connect model's feature names come from the server, and no Spark "
                           "Connect session is active")
    return list(session.range(1).select(F.call_function("treescore_feature_names", _model_literal(model))).first()[0])


def register(session, name: str, path: str) -> None:
    """Registers `path` (a model file or saved scorer folder the server can read) as `name`
    in the session's conf, then resolves it once so that a bad path fails here."""
    key = CONF_PREFIX + name
    previous = session.conf.get(key, None)
    session.conf.set(key, path)
    try:
        session.range(1).select(F.call_function("treescore_describe", F.lit(name))).collect()
    except Exception:
        if previous is None:
            session.conf.unset(key)
        else:
            session.conf.set(key, previous)
        raise
