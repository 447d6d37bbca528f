"""Synthetic data: a Parquet dataset of `id` plus float64 features, and the same rows as numpy.

Every Spark method reads the same files; the limit loads them into one C-contiguous matrix.
Feature f000 is the "discount" that workload C varies over a grid; the others are normal
noise with 1% missing values (NaN), as real features have.
"""
import os
from typing import List

import numpy as np

DISCOUNT_LEVELS_MAX = 0.7
MISSING_RATE = 0.01


def feature_names(count: int) -> List[str]:
    return [f"f{i:03d}" for i in range(count)]


def discount_grid(levels: int) -> np.ndarray:
    """Workload C's what-if levels for f000: 0.00, 0.05, ..., 0.70 for 15 levels."""
    return np.round(np.linspace(0.0, DISCOUNT_LEVELS_MAX, levels), 6)


def features(rows: int, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, count))
    x[rng.random(x.shape) < MISSING_RATE] = np.nan
    x[:, 0] = np.round(rng.uniform(0.0, DISCOUNT_LEVELS_MAX, size=rows), 2)
    return x


def target(x: np.ndarray, seed: int) -> np.ndarray:
    """A label with many features involved, so the trees split across the whole feature set."""
    rng = np.random.default_rng(seed)
    s = np.nan_to_num(x)
    discount = s[:, 0]
    used = min(40, s.shape[1] - 1)
    weights = rng.normal(size=used)
    y = 2.0 * discount * (s[:, 1] > 0) - 1.5 * discount ** 2
    y += np.sin(s[:, 1:used + 1] * 1.3) @ weights
    y += 0.5 * s[:, 2] * s[:, 3] + 0.3 * s[:, 4] ** 2
    return y + rng.normal(scale=0.1, size=len(y))


def write_dataset(directory: str, total_rows: int, chunk_rows: int, count: int) -> List[str]:
    """Writes total_rows rows as files of chunk_rows rows each, ids in order; returns the paths.

    Files are generated one at a time (seeded by file index), so memory stays at one chunk
    and the first k files are the same whatever the total.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(directory, exist_ok=True)
    names = feature_names(count)
    paths = []
    for index in range(-(-total_rows // chunk_rows)):
        x = features(chunk_rows, count, seed=1000 + index)
        columns = [pa.array(np.arange(index * chunk_rows, (index + 1) * chunk_rows, dtype=np.int64))]
        columns += [pa.array(x[:, j]) for j in range(count)]
        path = os.path.join(directory, f"part-{index:05d}.parquet")
        pq.write_table(pa.table(columns, names=["id"] + names), path, row_group_size=chunk_rows)
        paths.append(path)
    return paths


def files_for(paths: List[str], rows: int, chunk_rows: int) -> List[str]:
    """The fewest files holding ids 0 .. rows-1 (filter on id when rows is not a multiple)."""
    count = -(-rows // chunk_rows)
    if count > len(paths):
        raise ValueError(f"{rows} rows asked for, only {len(paths) * chunk_rows} generated")
    return paths[:count]


def load_matrix(paths: List[str], count: int, rows: int) -> np.ndarray:
    """The features of the first `rows` rows of these files as one float64 C-contiguous matrix."""
    import pyarrow.parquet as pq

    names = feature_names(count)
    tables = [pq.read_table(p, columns=names) for p in paths]
    matrix = np.empty((rows, count), dtype=np.float64)
    start = 0
    for table in tables:
        take = min(table.num_rows, rows - start)
        for j, name in enumerate(names):
            matrix[start:start + take, j] = table.column(name).to_numpy()[:take]
        start += take
    return matrix
