"""treescore.Model: a LightGBM model, checked and held by the JVM, ready to score in Spark."""
from typing import List, Optional

from treescore._jvm import active_jvm
from treescore.errors import jvm_errors


class Model:
    """A LightGBM text model. Build one with Model.load, Model.from_booster or Model.from_string.

    The model's text is validated on the driver when it is made, so a damaged file fails here,
    with a message naming the problem, instead of crashing an executor later.
    """

    def __init__(self, java_model):
        self._java_model = java_model

    @classmethod
    def load(cls, path: str, sha256: Optional[str] = None) -> "Model":
        """Reads a LightGBM text model from a local or Hadoop path (file:, hdfs://, s3a://).

        With sha256, the file must have that SHA-256 (hex): it catches damage that still
        parses as a valid, different model.

        >>> model = Model.load("/models/churn.txt", sha256="3f1c...")
        """
        tree_model = active_jvm().treescore.model.TreeModel
        with jvm_errors():
            return cls(tree_model.load(path) if sha256 is None else tree_model.load(path, sha256))

    @classmethod
    def from_string(cls, text: str) -> "Model":
        """A model from LightGBM's text format, as Booster.model_to_string() returns it."""
        with jvm_errors():
            return cls(active_jvm().treescore.model.TreeModel.fromString(text))

    @classmethod
    def from_booster(cls, booster) -> "Model":
        """A model from a trained lightgbm.Booster.

        >>> model = Model.from_booster(lightgbm.train(params, dataset))
        """
        return cls.from_string(booster.model_to_string())

    @property
    def feature_names(self) -> List[str]:
        return list(self._java_model.featureNamesArray())

    @property
    def num_features(self) -> int:
        return self._java_model.numFeatures()

    @property
    def num_classes(self) -> int:
        return self._java_model.numClasses()

    @property
    def num_iterations(self) -> int:
        return self._java_model.numIterations()

    @property
    def categorical_features(self) -> List[str]:
        """The features the model splits on by category; give them as integer category codes."""
        return list(self._java_model.categoricalFeaturesArray())

    @property
    def content_hash(self) -> str:
        """SHA-256 of the model text: the model's identity on the cluster."""
        return self._java_model.contentHash()

    def __repr__(self) -> str:
        return f"Model({self.content_hash[:12]}, {self.num_features} features)"
