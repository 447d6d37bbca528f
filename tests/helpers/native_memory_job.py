"""Child process of test_native_memory.py: one Spark session scoring many queries over more
models than its model cache's budget holds, cycling through every output kind, iteration ranges,
ensembles, routes, cascades, grids, top-K and contributions. It reports the JVM's resident memory
and treescore's native account after the warm-up and at the end, and checks scores as it goes:
a plain model's against lightgbm's Booster.predict, every other query's against its own first
run, bit for bit (by then its models have been evicted and parsed again many times).

Usage: python native_memory_job.py <spec.json> <report.json>
spec: models (paths of LightGBM text models), rows (a Parquet file of the models' features and an
"id"), budget (spark.treescore.cache.maxBytes), queries, warmup, driver_memory, and optionally
kinds: the query kinds to cycle through (all of QUERIES where absent); master (local[2] where
absent); conf: more Spark settings.
"""
import hashlib
import json
import sys

import lightgbm as lgb
import numpy as np
import pyspark.sql.functions as F
from pyspark.sql import SparkSession

import treescore


def session(spec: dict) -> SparkSession:
    # The heap is committed and touched at start (-Xms, AlwaysPreTouch), so that resident memory
    # moves with native memory rather than with the heap's growth.
    builder = (
        SparkSession.builder.master(spec.get("master", "local[2]"))
        .appName("treescore-native-memory")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", spec["driver_memory"])
        .config("spark.driver.extraJavaOptions", f"-Xms{spec['driver_memory']} -XX:+AlwaysPreTouch")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.treescore.cache.maxBytes", spec["budget"])
    )
    for key, value in spec.get("conf", {}).items():
        builder = builder.config(key, value)
    spark = treescore.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def ordered(frame, column="s") -> np.ndarray:
    """One query's scores in row order, as one float64 array (arrays flattened)."""
    values = [r[column] for r in frame.orderBy("id").select(column).collect()]
    return np.array([v for row in values for v in (row if isinstance(row, (list, tuple)) else [row])],
                    dtype=np.float64)


def digest(values: np.ndarray) -> str:
    return hashlib.sha256(values.view(np.uint64).tobytes()).hexdigest()


class Soak:
    def __init__(self, spec):
        self.spec = spec
        self.spark = session(spec)
        self.jvm = self.spark.sparkContext._jvm
        self.rows = self.spark.read.parquet(spec["rows"]).withColumn("seg", (F.col("id") % 3).cast("string")).cache()
        self.rows.count()
        self.features = self.spark.read.parquet(spec["rows"]).orderBy("id").drop("id").toPandas().to_numpy()
        self.paths = spec["models"]
        self.boosters = {}
        self.first_seen = {}
        self.checked = 0

    def model(self, i):
        return treescore.Model.load(self.paths[i % len(self.paths)])

    def booster(self, i):
        path = self.paths[i % len(self.paths)]
        if path not in self.boosters:
            self.boosters[path] = lgb.Booster(model_file=path)
        return self.boosters[path]

    def against_lightgbm(self, name, got, expected):
        assert got.shape == expected.shape, f"{name}: {got.shape} vs {expected.shape}"
        same = got.view(np.uint64) == expected.view(np.uint64)
        assert same.all(), f"{name}: {np.count_nonzero(~same)} of {same.size} values differ from lightgbm"
        self.checked += 1

    def against_first_run(self, name, got):
        key = digest(got)
        first = self.first_seen.setdefault(name, key)
        assert key == first, f"{name}: differs from its first run"
        self.checked += 1

    # One query per kind; q is the query's number, which picks its models.
    def prediction(self, q):
        got = ordered(self.rows.select("id", treescore.score(self.model(q)).alias("s")))
        self.against_lightgbm(f"prediction {q % len(self.paths)}", got, self.booster(q).predict(self.features))

    def raw_range(self, q):
        start, count = q % 5, 10 + q % 7
        column = treescore.score(self.model(q), kind="raw", start_iteration=start, num_iterations=count)
        got = ordered(self.rows.select("id", column.alias("s")))
        expected = self.booster(q).predict(self.features, raw_score=True, start_iteration=start, num_iteration=count)
        self.against_lightgbm(f"raw {q % len(self.paths)} [{start}, +{count})", got, expected)

    def leaf(self, q):
        got = ordered(self.rows.select("id", treescore.score(self.model(q), kind="leaf").alias("s")))
        expected = self.booster(q).predict(self.features, pred_leaf=True).astype(np.float64).ravel()
        self.against_lightgbm(f"leaf {q % len(self.paths)}", got, expected)

    def contrib(self, q):
        got = ordered(self.rows.select("id", treescore.score(self.model(q), kind="contrib").alias("s")))
        expected = self.booster(q).predict(self.features, pred_contrib=True).ravel()
        self.against_lightgbm(f"contrib {q % len(self.paths)}", got, expected)

    def ensemble(self, q):
        blend = treescore.Ensemble([self.model(q), self.model(q + 1)], weights=[0.7, 0.3])
        self.against_first_run(f"ensemble {q % len(self.paths)}",
                               ordered(self.rows.select("id", treescore.score(blend).alias("s"))))

    def route(self, q):
        routed = treescore.Routed("seg", {"0": self.model(q), "1": self.model(q + 2)}, default=self.model(q + 4))
        self.against_first_run(f"route {q % len(self.paths)}",
                               ordered(self.rows.select("id", treescore.score(routed).alias("s"))))

    def cascade(self, q):
        cascade = treescore.Cascade(self.model(q), self.model(q + 3), accept_below=-0.5, accept_above=0.5)
        self.against_first_run(f"cascade {q % len(self.paths)}",
                               ordered(self.rows.select("id", treescore.score(cascade).alias("s"))))

    def grid(self, q):
        column = treescore.score_grid(self.model(q), vary={"x0": [-1.0, 0.0, 1.0], "x2": [0.5, 2.0]})
        self.against_first_run(f"grid {q % len(self.paths)}", ordered(self.rows.select("id", column.alias("s"))))

    def top_k(self, q):
        best = treescore.top_k(self.rows, self.model(q), 25, score_col="s")
        self.against_first_run(f"top-k {q % len(self.paths)}", ordered(best))

    def ensemble_contrib(self, q):
        members = [treescore.Member(self.model(q), raw=True), treescore.Member(self.model(q + 5), raw=True)]
        blend = treescore.Ensemble(members, weights=[0.5, 0.5], combine="sum")
        column = treescore.score(blend, kind="contrib")
        self.against_first_run(f"ensemble contrib {q % len(self.paths)}",
                               ordered(self.rows.select("id", column.alias("s"))))

    def nested_contrib(self, q):
        inner = treescore.Ensemble([treescore.Member(self.model(q), raw=True), treescore.Member(self.model(q + 1), raw=True)],
                                   weights=[0.6, 0.4], combine="sum")
        routed = treescore.Routed("seg", {"0": inner, "1": treescore.Member(self.model(q + 2), raw=True)},
                                  default=treescore.Member(self.model(q + 3), raw=True))
        column = treescore.score(routed, kind="contrib")
        self.against_first_run(f"nested contrib {q % len(self.paths)}",
                               ordered(self.rows.select("id", column.alias("s"))))

    def reading(self):
        """Resident memory of this session's JVM and treescore's native account, between queries."""
        pid = self.jvm.java.lang.ProcessHandle.current().pid()
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
        held = self.jvm.treescore.nativelib.NativeMemory.held()
        kinds = {kind: held.apply(kind) for kind in ("working", "models", "programs", "buffers")}
        cache = self.jvm.treescore.nativelib.ModelCache
        runtime = self.jvm.java.lang.Runtime.getRuntime()
        return {"rss": rss, "heap_committed": runtime.totalMemory(), "heap_used": runtime.totalMemory() - runtime.freeMemory(),
                "c_allocator_in_use": self.jvm.treescore.nativelib.NativeMethods.allocatorInUseBytes(), "native": kinds, "native_total": held.total(), "native_peak": held.peak(),
                "models_loaded": cache.loadedCount(), "evictions": cache.evictions(),
                "budget": cache.budgetBytes()}


# The soak's kinds. nested_contrib, whose four models' TreeSHAP tables need more than the soak's
# budget, is named where a test asks for it.
QUERIES = ["prediction", "raw_range", "leaf", "contrib", "ensemble", "route", "cascade", "grid", "top_k",
           "ensemble_contrib"]


def main(spec_path, report_path):
    with open(spec_path) as f:
        spec = json.load(f)
    soak = Soak(spec)
    kinds = spec.get("kinds", QUERIES)
    report = {}
    for q in range(spec["queries"]):
        getattr(soak, kinds[q % len(kinds)])(q // len(kinds) + q)
        if q + 1 == spec["warmup"]:
            report["warmup"] = soak.reading()
    report["end"] = soak.reading()
    report["checked"] = soak.checked
    with open(report_path, "w") as f:
        json.dump(report, f)
    soak.spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
