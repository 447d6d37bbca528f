"""The native section: tree engines on the same in-memory matrix, outside Spark.

For each model shape, LightGBM's predict, treescore's engine, lleaves, tl2cgen, oneDAL
(daal4py.mb from scikit-learn-intelex) and ONNX Runtime (on onnxmltools' conversion) score one
float64 matrix with 1 and with 2 threads, and each engine's share of outputs bit-identical to
LightGBM's is recorded. The four peers are optional (lleaves needs llvmlite<0.45): a shape
reports one as not installed when it is missing, and as failed when it refuses the model
(oneDAL rejects categorical splits). Models are trained once and cached in
bench/.cache/models/, as the ensemble is.
"""
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Dict, Optional

import numpy as np

from bench import data
from bench.config import CORES, Sizes
from bench.models import CACHE_DIR
from bench.timing import Result, measure

WORKLOAD = "engines"


@dataclass(frozen=True)
class Shape:
    name: str
    trees: int
    leaves: int
    features: int  # the first `features` columns of bench.data's table
    classes: int = 1
    categorical: bool = False  # trained with the table's category columns as categorical features
    linear: bool = False  # linear_tree: each leaf a linear model of the features on its path


SHAPES = [
    Shape("A's member: 300 trees x 31 leaves, 200 features", 300, 31, 200),
    Shape("1,000 trees x 15 leaves", 1000, 15, 200),
    Shape("100 trees x 255 leaves", 100, 255, 200),
    Shape("500 trees x 63 leaves, 120 features", 500, 63, 120),  # QuickScorer's 64-bit leaf sets
    Shape("10 classes, 50 iterations x 31 leaves", 50, 31, 100, classes=10),
    Shape("categorical: 200 trees x 31 leaves, 8 of 50 features categorical (4 to 1,200 codes)", 200, 31, 50,
          categorical=True),
    Shape("linear trees: 100 trees x 31 leaves, 50 features", 100, 31, 50, linear=True),
]


def _rows(shape: Shape, count: int, seed: int) -> np.ndarray:
    return data.features(count, shape.features, seed)


def scoring_rows(shape: Shape, count: int) -> np.ndarray:
    """The rows the in-memory sections score with a shape's model (not its training rows)."""
    return _rows(shape, count, seed=41)


def train(shape: Shape, sizes: Sizes, log) -> str:
    """The shape's model text, trained on bench.data's table (its first shape.features columns,
    named as the table names them) and cached."""
    import lightgbm as lgb

    trees = max(2, shape.trees // 10) if sizes.mode == "smoke" else shape.trees
    kind = f"{int(shape.categorical)}cat" + ("-linear" if shape.linear else "")
    key = f"engine-{shape.trees}t-{shape.leaves}l-{shape.features}f-{shape.classes}c-{kind}-{trees}-v2"
    path = os.path.join(CACHE_DIR, key + ".txt")
    if not os.path.isfile(path):
        log(f"training {shape.name} ({trees} iterations; cached afterwards in {path})")
        x = _rows(shape, 20_000, seed=31)
        y = data.target(x, seed=32)
        categories = data.category_columns(shape.features) if shape.categorical else []
        if shape.categorical:
            y = y + (np.nan_to_num(x[:, categories[-1]]) % 7)
        params = {"objective": "regression", "num_leaves": shape.leaves, "min_data_in_leaf": 5, "max_bin": 63,
                  "learning_rate": 0.1, "num_threads": CORES, "verbose": -1, "seed": 3}
        if shape.linear:
            params.update(linear_tree=True)
        if shape.classes > 1:
            y = np.digitize(y, np.quantile(y, np.linspace(0, 1, shape.classes + 1)[1:-1]))
            params.update(objective="multiclass", num_class=shape.classes)
        dataset = lgb.Dataset(x, y, feature_name=data.feature_names(shape.features),
                              categorical_feature=categories or "auto")
        os.makedirs(CACHE_DIR, exist_ok=True)
        lgb.train(params, dataset, trees).save_model(path + ".tmp")
        os.replace(path + ".tmp", path)
    with open(path) as f:
        return f.read()


# Compiled models (lleaves' object files, tl2cgen's libraries), kept by model text hash: compiling
# a shape takes minutes, and a rerun of the same model need not pay it again.
COMPILED_DIR = os.path.join(CACHE_DIR, "compiled")


def _compiled(text: str, suffix: str) -> str:
    import hashlib

    os.makedirs(COMPILED_DIR, exist_ok=True)
    return os.path.join(COMPILED_DIR, hashlib.sha256(text.encode()).hexdigest()[:24] + suffix)


def _lleaves(text: str, model_file: str) -> Optional[Callable[[np.ndarray, int], np.ndarray]]:
    try:
        import lleaves
    except ImportError:
        return None
    model = lleaves.Model(model_file=model_file)
    model.compile(cache=_compiled(text, "-lleaves.o"))  # compiles only where the cache file is missing
    return lambda x, threads: model.predict(x, n_jobs=threads)


def _tl2cgen(text: str, model_file: str) -> Optional[Callable[[np.ndarray, int], np.ndarray]]:
    try:
        import tl2cgen
        import treelite
    except ImportError:
        return None
    library = _compiled(text, "-tl2cgen.so")
    if not os.path.isfile(library):
        model = treelite.frontend.load_lightgbm_model(model_file)
        tl2cgen.export_lib(model, toolchain="gcc", libpath=library + ".tmp.so", params={"parallel_comp": CORES})
        os.replace(library + ".tmp.so", library)  # a killed compile never leaves half a library behind
    predictors = {threads: tl2cgen.Predictor(library, nthread=threads) for threads in (1, CORES)}
    return lambda x, threads: predictors[threads].predict(tl2cgen.DMatrix(x, dtype="float64"))


def _onedal(text: str, model_file: str) -> Optional[Callable[[np.ndarray, int], np.ndarray]]:
    """oneDAL's gradient-boosting inference (daal4py.mb, in scikit-learn-intelex): the model's
    LightGBM output, probabilities for a classifier."""
    try:
        import daal4py
        import lightgbm as lgb
    except ImportError:
        return None
    model = daal4py.mb.convert_model(lgb.Booster(model_str=text))

    def predict(x: np.ndarray, threads: int) -> np.ndarray:
        daal4py.daalinit(threads)  # oneDAL's thread count is process-wide
        if not model.is_classifier_:
            return model.predict(x)
        probabilities = model.predict_proba(x)
        return probabilities[:, 1] if model.n_classes_ == 2 else probabilities  # LightGBM's binary output
    return predict


def _onnxruntime(text: str, model_file: str) -> Optional[Callable[[np.ndarray, int], np.ndarray]]:
    """ONNX Runtime on onnxmltools' conversion: float32 inputs, as its tree operators take them."""
    try:
        import lightgbm as lgb
        import onnxmltools
        import onnxruntime
        from onnxmltools.convert.common.data_types import FloatTensorType
    except ImportError:
        return None
    booster = lgb.Booster(model_str=text)
    features = booster.num_feature()
    converted = onnxmltools.convert_lightgbm(booster, initial_types=[("input", FloatTensorType([None, features]))],
                                             zipmap=False).SerializeToString()
    sessions = {}
    for threads in (1, CORES):
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        options.log_severity_level = 3  # not a warning per multiclass run about the label output's shape
        sessions[threads] = onnxruntime.InferenceSession(converted, options, providers=["CPUExecutionProvider"])
    # A classifier's outputs are its labels and then its probabilities; a regressor's, its values.
    last = len(sessions[1].get_outputs()) - 1
    return lambda x, threads: sessions[threads].run(None, {"input": x.astype(np.float32)})[last]


# The engines users would pick instead, each optional: a missing package reports "not installed".
PEERS = {"lleaves": _lleaves, "tl2cgen": _tl2cgen, "onedal": _onedal, "onnxruntime": _onnxruntime}


def native_engines(bench) -> None:
    """Every shape, every engine, 1 and 2 threads; appends Results and records identical shares."""
    import lightgbm as lgb

    import treescore_native

    sizes = bench.sizes
    rows = min(sizes.rows_a, 100_000)
    identical: Dict[str, Dict[str, float]] = bench.diagnostics.setdefault("engine_identical", {})
    layouts: Dict[str, str] = bench.diagnostics.setdefault("engine_layouts", {})
    for shape in SHAPES:
        text = train(shape, sizes, bench.log)
        matrix = scoring_rows(shape, rows)
        booster = lgb.Booster(model_str=text)
        engine = treescore_native.ExactScorer(text)
        layouts[shape.name] = engine.layout
        expected = booster.predict(matrix, num_threads=1).reshape(rows, -1)
        with tempfile.TemporaryDirectory(prefix="treescore-engines-") as work:
            started = time.perf_counter()
            candidates = {
                "lightgbm": lambda x, threads: booster.predict(x, num_threads=threads),
                "treescore": lambda x, threads: engine.predict(x, num_threads=threads),
            }
            notes = {}
            model_file = os.path.join(work, "model.txt")
            with open(model_file, "w") as f:
                f.write(text)
            for name, build in PEERS.items():
                try:
                    predict = build(text, model_file)
                    notes[name] = "not installed" if predict is None else ""
                except Exception as error:  # a compiler that refuses a model is a result, not a crash
                    predict, notes[name] = None, f"failed: {type(error).__name__}: {str(error)[:120]}"
                if predict is not None:
                    candidates[name] = predict
            bench.log(f"  {shape.name}: layout {engine.layout}; compilers ready in {time.perf_counter() - started:.0f} s")
            for name in ("lightgbm", "treescore", *PEERS):
                if name not in candidates:
                    bench.results.append(Result(WORKLOAD, name, rows, status=notes[name], note=shape.name))
                    continue
                predict = candidates[name]
                got = np.asarray(predict(matrix, 1), dtype=np.float64).reshape(rows, -1)
                same = got.shape == expected.shape and got.view(np.uint64) == expected.view(np.uint64)
                identical.setdefault(shape.name, {})[name] = float(np.mean(same)) if got.shape == expected.shape else 0.0
                for threads in (1, CORES):
                    result = Result(WORKLOAD, name, rows, note=shape.name, param=threads)
                    measure(result, lambda: predict(matrix, threads), sizes.runs, os.getpid(), with_children=False,
                            warm_up=lambda: predict(matrix[: max(1, rows // 10)], threads), log=bench.log)
                    bench.results.append(result)
