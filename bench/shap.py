"""The SHAP section: TreeSHAP contributions in memory, outside Spark.

For A's member, 100 trees x 255 leaves, 10 classes and the categorical model (bench/engines.py's
shapes), LightGBM's `predict(pred_contrib=True)` and treescore's engine (kind "contrib") explain
the same float64 matrix with 1 and 2 threads, and so does FastTreeSHAP (v1 and v2, one thread)
where it is installed (`pip install fasttreeshap-fixed==0.1.5`, which builds from source and
brings numba; it is not in the bench extra). Each method's share of outputs bit-identical to
LightGBM's is recorded, and for treescore what its tables cost: their first build, their size,
the share of LightGBM's work its replayed leaves (each once per pattern in a block) stand for, and
the engine `auto` picks.
"""
import os
import time
from typing import Callable, Dict, Optional

import numpy as np

from bench import engines
from bench.config import CORES
from bench.timing import Result, measure

WORKLOAD = "shap"
# Every shape but the 1,000 small trees, and the linear one, for which LightGBM defines no contributions.
SHAPES = [s for s in engines.SHAPES if s.trees != 1000 and not s.linear]


def _fasttreeshap(text: str, algorithm: str) -> Optional[Callable[[np.ndarray, int], np.ndarray]]:
    """FastTreeSHAP's values in LightGBM's layout (per class: features, then the expected value)."""
    try:
        import fasttreeshap_fixed as fasttreeshap
    except ImportError:
        return None
    import lightgbm as lgb

    explainer = fasttreeshap.TreeExplainer(lgb.Booster(model_str=text), algorithm=algorithm, n_jobs=1)

    def explain(x: np.ndarray, threads: int) -> np.ndarray:
        values = explainer.shap_values(x, check_additivity=False)
        per_class = values if isinstance(values, list) else [values]
        expected = np.atleast_1d(explainer.expected_value)
        return np.hstack([np.hstack([v, np.full((len(x), 1), e)]) for v, e in zip(per_class, expected)])

    return explain


def contributions(bench) -> None:
    """Every shape, every method, 1 and 2 threads (FastTreeSHAP: 1); appends Results."""
    import lightgbm as lgb

    import treescore
    import treescore_native

    sizes = bench.sizes
    rows = sizes.shap_rows
    identical: Dict[str, Dict[str, float]] = bench.diagnostics.setdefault("shap_identical", {})
    tables: Dict[str, Dict] = bench.diagnostics.setdefault("shap_tables", {})
    for shape in SHAPES:
        text = engines.train(shape, sizes, bench.log)
        matrix = engines.scoring_rows(shape, rows)
        booster = lgb.Booster(model_str=text)
        engine = treescore_native.ExactScorer(text)
        started = time.perf_counter()
        stats = engine.shap_tables()  # builds the tables, once per model
        built = time.perf_counter() - started
        shap_tables = bench.spark._jvm.treescore.model.TreeModel.fromString(text).shapTables()
        tables[shape.name] = {**stats, "build_seconds": built, "replayed_share": shap_tables.replayedShare(),
                              "auto": treescore.Model.from_string(text).engine("contrib")}
        methods = {"lightgbm": lambda x, threads: booster.predict(x, pred_contrib=True, num_threads=threads),
                   "treescore": lambda x, threads: engine.predict(x, kind="contrib", num_threads=threads)}
        missing = []
        for algorithm in ("v1", "v2"):
            explain = _fasttreeshap(text, algorithm)
            if explain is None:
                missing.append(Result(WORKLOAD, f"fasttreeshap {algorithm}", rows, note=shape.name,
                                      status="not installed (pip install fasttreeshap-fixed==0.1.5)"))
            else:
                methods[f"fasttreeshap {algorithm}"] = explain
        expected = booster.predict(matrix, pred_contrib=True, num_threads=1)
        for name, explain in methods.items():
            got = np.asarray(explain(matrix, 1), dtype=np.float64)
            same = got.shape == expected.shape and got.view(np.uint64) == expected.view(np.uint64)
            identical.setdefault(shape.name, {})[name] = float(np.mean(same)) if got.shape == expected.shape else 0.0
            for threads in ((1,) if name.startswith("fasttreeshap") else (1, CORES)):
                result = Result(WORKLOAD, name, rows, note=shape.name, param=threads)
                measure(result, lambda: explain(matrix, threads), sizes.runs, os.getpid(), with_children=False,
                        warm_up=lambda: explain(matrix[: max(1, rows // 10)], threads), log=bench.log)
                bench.results.append(result)
        bench.results.extend(missing)
        bench.log(f"  {shape.name}: tables {stats['table_addends'] * 8 / 2**20:.0f} MiB built in {built:.1f} s, "
                  f"{stats['replayed_leaves']} of {stats['leaves']} leaves replayed; auto: {tables[shape.name]['auto']}")
