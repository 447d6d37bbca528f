"""The ensemble every method scores: 3 LightGBM regressors, trained once and cached on disk.

Training 3 x 300 trees takes minutes on 2 cores, so model files are kept in bench/.cache/
(gitignored) under a key naming their shape; reruns load them instead of training.
"""
import os
from dataclasses import dataclass, field
from typing import List, Tuple

import numpy as np

from bench import data
from bench.config import CORES, WEIGHTS, Sizes

CACHE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cache", "models")
MEMBERS = 3


@dataclass
class Ensemble:
    texts: Tuple[str, ...]  # LightGBM text models
    weights: Tuple[float, ...]
    feature_names: List[str]
    boosters: list = field(default_factory=list)  # lightgbm.Booster, for the limit
    engines: list = field(default_factory=list)  # treescore_native.ExactScorer, for the engine's limit

    def predict(self, matrix: np.ndarray, num_threads: int, engine: str = "lightgbm") -> np.ndarray:
        """The weighted mean of the members' predictions, summed in the order treescore's query uses,
        by LightGBM's predict or treescore's engine (the same bits)."""
        members = self.boosters if engine == "lightgbm" else self.engines
        total = None
        for weight, member in zip(self.weights, members):
            part = weight * member.predict(matrix, num_threads=num_threads).reshape(-1)
            total = part if total is None else total + part
        return total

    @property
    def classes(self) -> int:
        """Outputs per row: 1, or the class count of a multiclass model."""
        return int(next(line.split("=")[1] for line in self.texts[0].splitlines() if line.startswith("num_class=")))

    def mean_leaves(self) -> float:
        counts = [int(line.split("=")[1]) for text in self.texts for line in text.splitlines()
                  if line.startswith("num_leaves=")]
        return float(np.mean(counts))


def _params(sizes: Sizes, seed: int) -> dict:
    return {
        "objective": "regression", "num_leaves": sizes.leaves, "learning_rate": 0.05,
        "min_data_in_leaf": 20, "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1,
        "max_bin": 63,  # training speed only; prediction cost depends on tree shape, not bins
        "seed": seed, "num_threads": CORES, "verbose": -1,
    }


def _key(sizes: Sizes) -> str:
    return f"f{sizes.features}-t{sizes.trees}-l{sizes.leaves}-n{sizes.train_rows}-v2"  # v2: bench.data's table


def load_or_train(sizes: Sizes, log=print) -> Ensemble:
    import lightgbm as lgb

    directory = os.path.join(CACHE_DIR, _key(sizes))
    paths = [os.path.join(directory, f"member-{i}.txt") for i in range(MEMBERS)]
    names = data.feature_names(sizes.features)
    if not all(os.path.isfile(p) for p in paths):
        os.makedirs(directory, exist_ok=True)
        x = data.features(sizes.train_rows, sizes.features, seed=7)
        for i, path in enumerate(paths):
            if os.path.isfile(path):
                continue
            log(f"training member {i + 1}/{MEMBERS}: {sizes.trees} trees, {sizes.leaves} leaves, "
                f"{sizes.features} features, {sizes.train_rows:,} rows (cached afterwards in {directory})")
            y = data.target(x, seed=100 + i)
            booster = lgb.train(_params(sizes, seed=i + 1), lgb.Dataset(x, y, feature_name=names), sizes.trees)
            booster.save_model(path + ".tmp")
            os.replace(path + ".tmp", path)  # a killed run never leaves half a model behind
    texts = []
    for path in paths:
        with open(path) as f:
            texts.append(f.read())
    return of_texts(texts, WEIGHTS, names)


def of_texts(texts, weights, names: List[str]) -> Ensemble:
    """An Ensemble of these model texts (one, with weight 1, for a single model)."""
    import lightgbm as lgb

    import treescore_native

    boosters = [lgb.Booster(model_str=t) for t in texts]
    return Ensemble(tuple(texts), tuple(weights), names, boosters, [treescore_native.ExactScorer(t) for t in texts])
