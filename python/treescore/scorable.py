"""Scorable: the base of everything score() evaluates natively besides a single Model (the
ensembles, routes, cascades and grids of treescore.ensembles). Its own module, so that
treescore.functions can recognise scorers without importing the ensembles that use it."""
import json
from typing import Dict, List

from treescore._connect import active_connect_session
from treescore._jvm import active_jvm
from treescore.errors import jvm_errors
from treescore.model import Model


class Scorable:
    """Something score() evaluates natively: an Ensemble, Routed, Cascade, Grid or a loaded spec."""

    def _node(self, models: Dict[str, Model]) -> dict:
        raise NotImplementedError

    def _java(self):
        """The JVM scorer this spec describes, checked by the JVM (errors name the JSON path)."""
        if active_connect_session() is not None:
            raise NotImplementedError("treescore: on Spark Connect the server checks a scorer when it is scored; "
                                      "save() and describe() need the classic API")
        models: Dict[str, Model] = {}
        spec = json.dumps({"treescore_spec": 1, "scorer": self._node(models)})
        jvm = active_jvm()
        java_models = jvm.java.util.HashMap()
        for key, model in models.items():
            java_models.put(key, model._java_model)
        with jvm_errors():
            return jvm.treescore.ensemble.SpecIO.fromJson(spec, java_models)

    def save(self, path: str) -> None:
        """Writes the spec and its model files into a new folder (local or Hadoop path)."""
        with jvm_errors():
            active_jvm().treescore.ensemble.SpecIO.save(self._java(), path)

    def describe(self) -> str:
        return self._java().describe()

    def inputs(self) -> List[str]:
        """The numeric inputs this scorer reads, in first-use order: kind="contrib" gives one
        value per input in this order, then the expected value."""
        return list(self._java().featureInputsArray())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"
