"""treescore.Model: a LightGBM model, checked and held by the JVM, ready to score in Spark."""
import hashlib
import os
from typing import Any, List, Optional, Union

from treescore import _connect
from treescore._connect import active_connect_session
from treescore._jvm import active_jvm, active_session
from treescore.errors import jvm_errors


class Model:
    """A LightGBM text model. Build one with Model.load, Model.from_booster or Model.from_string.

    The model's text is validated on the driver when it is made, so a damaged file fails here,
    with a message naming the problem, instead of crashing an executor later.

    On a Spark Connect client there is no JVM to hold the model: Model.load keeps the path,
    which the server reads when the model is first scored (so it names a file the server can
    read, like any data path), and Model.from_string / from_booster keep the text, which is
    sent with the query and checked by the server.
    """

    def __init__(self, java_model, text: Optional[str] = None, path: Optional[str] = None):
        self._java_model, self._text, self._path = java_model, text, path

    @classmethod
    def load(cls, source: "Union[str, os.PathLike, Any]", sha256: Optional[str] = None) -> "Model":
        """A model from a file, a directory or a trained LightGBM object.

        source is one of:
        - a LightGBM text model file, local or on any Hadoop file system (file:, hdfs://, s3a://);
          a path without a scheme is on Spark's default file system, relative to its working
          directory;
        - an MLflow LightGBM model directory (as mlflow.lightgbm.log_model saves a Booster),
          read without mlflow;
        - a lightgbm.Booster, or a fitted scikit-learn LGBMRegressor, LGBMClassifier or LGBMRanker.

        With sha256, the model text must have that SHA-256 (hex): it catches damage that still
        parses as a valid, different model.

        >>> model = Model.load("/models/churn.txt", sha256="3f1c...")
        >>> model = Model.load("runs/5e1b/artifacts/model")   # an MLflow model directory
        >>> model = Model.load(fitted_lgbm_classifier)
        """
        if not isinstance(source, (str, os.PathLike)):
            model = cls.from_booster(_booster_of(source))
            if sha256 is not None and model.content_hash != sha256.strip().lower():
                raise ValueError(f"treescore: the model's SHA-256 is {model.content_hash} but {sha256} was expected")
            return model
        path = os.fspath(source)
        if active_connect_session() is not None:
            if sha256 is not None:
                raise ValueError("treescore: on Spark Connect the server reads the model file; "
                                 "sha256 checks need the classic API")
            return cls(None, path=path)
        tree_model = active_jvm().treescore.model.TreeModel
        with jvm_errors():
            return cls(tree_model.load(path) if sha256 is None else tree_model.load(path, sha256))

    @classmethod
    def from_string(cls, text: str) -> "Model":
        """A model from LightGBM's text format, as Booster.model_to_string() returns it."""
        if active_connect_session() is not None:
            return cls(None, text=text)
        with jvm_errors():
            return cls(active_jvm().treescore.model.TreeModel.fromString(text))

    @classmethod
    def from_booster(cls, booster) -> "Model":
        """A model from a trained lightgbm.Booster (or a fitted scikit-learn LightGBM estimator).

        >>> model = Model.from_booster(lightgbm.train(params, dataset))
        """
        return cls.from_string(_booster_of(booster).model_to_string())

    @property
    def _is_connect(self) -> bool:
        return self._java_model is None

    def _jvm_model(self, what: str):
        if self._is_connect:
            raise NotImplementedError(f"treescore: Model.{what} needs the classic (py4j) API; on Spark Connect the "
                                      "server holds the model")
        return self._java_model

    @property
    def feature_names(self) -> List[str]:
        if self._is_connect and self._text is not None:
            return _connect.feature_names(active_connect_session(), self)
        return list(self._jvm_model("feature_names").featureNamesArray())

    @property
    def num_features(self) -> int:
        if self._is_connect:
            return len(self.feature_names)
        return self._java_model.numFeatures()

    @property
    def num_classes(self) -> int:
        return self._jvm_model("num_classes").numClasses()

    @property
    def num_iterations(self) -> int:
        return self._jvm_model("num_iterations").numIterations()

    @property
    def categorical_features(self) -> List[str]:
        """The features the model splits on by category; give them as integer category codes."""
        return list(self._jvm_model("categorical_features").categoricalFeaturesArray())

    @property
    def content_hash(self) -> str:
        """SHA-256 of the model text: the model's identity on the cluster."""
        if self._is_connect and self._text is not None:
            return hashlib.sha256(self._text.encode("utf-8")).hexdigest()
        return self._jvm_model("content_hash").contentHash()

    def engine(self, kind: str = "prediction") -> str:
        """The engine that would evaluate this model's trees for a score of `kind` in the active
        session: "treescore" (treescore's own exact engine) or "lightgbm" (LightGBM's predictor).

        It follows spark.treescore.engine as set now: "auto" (the default) gives treescore's
        engine to every call except the contributions of a model that has no training counts;
        "treescore" raises, naming the reason, where the engine cannot serve; "lightgbm" always
        gives LightGBM. Both engines give the same bits. Contributions of a model with linear
        trees raise under every setting: LightGBM defines none.

        >>> model.engine()            # 'treescore'
        >>> model.engine("contrib")   # 'treescore', or 'lightgbm' for a model without training counts
        """
        # The JVM chooses, as it does for a query: by the setting, the kind and the model
        # (contributions only from models with training counts).
        java_model = self._jvm_model("engine")
        jvm = active_jvm()
        choice = active_session().conf.get("spark.treescore.engine", "auto")
        with jvm_errors():
            return jvm.treescore.model.Engine.nameFor(choice, java_model, kind)

    def __repr__(self) -> str:
        if self._is_connect:
            return f"Model(path={self._path!r})" if self._path is not None else f"Model({self.content_hash[:12]})"
        return f"Model({self.content_hash[:12]}, {self.num_features} features)"


def _booster_of(obj):
    """The lightgbm.Booster behind a Booster or a fitted scikit-learn LightGBM estimator."""
    try:
        import lightgbm
    except ImportError:
        lightgbm = None
    estimator = getattr(lightgbm, "LGBMModel", None)
    if estimator is not None and isinstance(obj, estimator):
        if not obj.__sklearn_is_fitted__():
            raise ValueError(f"treescore: the {type(obj).__name__} is not fitted; call fit() before Model.load")
        return obj.booster_
    if callable(getattr(obj, "model_to_string", None)):  # a lightgbm.Booster
        return obj
    raise TypeError(f"treescore: cannot make a model from a {type(obj).__module__}.{type(obj).__qualname__}; "
                    "expected a path, a lightgbm.Booster, or a fitted LGBMRegressor, LGBMClassifier or LGBMRanker")
