"""Code that runs inside PySpark's Python workers (imported there through PYTHONPATH).

Its module-level cache is what "model loaded once per worker" means: a worker process is
reused across tasks (spark.python.worker.reuse, the default), and this module stays imported
in it. Methods that load "once per task/partition" call load_ensemble instead.
"""
import numpy as np

_CACHE = {}


class WorkerEnsemble:
    def __init__(self, texts, weights):
        import lightgbm as lgb

        self.boosters = [lgb.Booster(model_str=t) for t in texts]
        self.weights = weights

    def predict(self, matrix: np.ndarray) -> np.ndarray:
        # One thread: Spark already runs one task per core. Summed in treescore's order.
        total = None
        for weight, booster in zip(self.weights, self.boosters):
            part = weight * booster.predict(matrix, num_threads=1)
            total = part if total is None else total + part
        return total

    def predict_row(self, values) -> float:
        return float(self.predict(np.array(values, dtype=np.float64).reshape(1, -1))[0])


def load_ensemble(payload) -> WorkerEnsemble:
    """Parses the models now; payload is a broadcast of (model texts, weights)."""
    texts, weights = payload.value
    return WorkerEnsemble(texts, weights)


def cached_ensemble(key: str, payload) -> WorkerEnsemble:
    """The models parsed once per worker process, found again by key on later calls."""
    model = _CACHE.get(key)
    if model is None:
        model = _CACHE[key] = load_ensemble(payload)
    return model


def arrow_matrix(batch, names) -> np.ndarray:
    """The named float64 columns of an Arrow record batch as one C-contiguous matrix."""
    matrix = np.empty((batch.num_rows, len(names)), dtype=np.float64)
    for j, name in enumerate(names):
        matrix[:, j] = batch.column(name).to_numpy(zero_copy_only=False)
    return matrix
