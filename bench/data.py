"""Synthetic data that looks like a real feature table: a Parquet dataset of `id` plus the
features, and the same rows as numpy.

Real features are not i.i.d. normal noise, and a tree walk's speed depends on how predictable
its branches are, so the generator mixes what feature tables hold (see `features`):

- f000, the "discount" that workload C varies over a grid: 0.00 to 0.70 in steps of 0.01;
- f001, a "price": log-normal, a heavy right tail (C derives "price after discount" from it);
- integer category codes (f002 onward, up to 8 columns) with 4 to 1,200 codes, Zipf-skewed
  (a few codes are most rows), 5% missing in half of them;
- the other columns: correlated blocks driven by a dozen latent factors, a quarter of them with
  Student-t (heavy-tailed) noise and some log-normal; 10% missing in every tenth column, 1%
  elsewhere.

Missing values are nulls in Parquet (NaN in numpy). Every Spark method reads the same files; the
limit loads them into one C-contiguous matrix. Files are written as Spark's own Parquet writer
would write them: dictionary pages only for the low-cardinality columns (the discount and the
category codes), plain pages for the high-cardinality doubles, where a dictionary would not pay.
"""
import os
from typing import List

import numpy as np

DISCOUNT_LEVELS_MAX = 0.7
CATEGORY_CODES = (4, 12, 31, 64, 150, 300, 700, 1200)  # distinct codes of each category column
LATENT_FACTORS = 12


def feature_names(count: int) -> List[str]:
    return [f"f{i:03d}" for i in range(count)]


def category_columns(count: int) -> List[int]:
    """The columns that hold integer category codes: f002 onward, at most 8, leaving 2 of every 5 numeric."""
    return list(range(2, 2 + min(len(CATEGORY_CODES), max(0, (count - 2) * 3 // 5))))


def discount_grid(levels: int) -> np.ndarray:
    """Workload C's what-if levels for f000: 0.00, 0.05, ..., 0.70 for 15 levels."""
    return np.round(np.linspace(0.0, DISCOUNT_LEVELS_MAX, levels), 6)


def features(rows: int, count: int, seed: int) -> np.ndarray:
    """rows x count float64 features as the module docstring describes; NaN is missing. The
    columns' character (which are categories, correlated, heavy-tailed) depends on the column
    index alone, the values on `seed`."""
    rng = np.random.default_rng(seed)
    shape = np.random.default_rng(12345)  # the table's structure, the same for every seed
    x = np.empty((rows, count))
    x[:, 0] = np.round(rng.uniform(0.0, DISCOUNT_LEVELS_MAX, size=rows), 2)
    if count > 1:
        x[:, 1] = np.round(np.exp(rng.normal(3.0, 0.8, size=rows)), 2)
    categories = category_columns(count)
    for k, column in enumerate(categories):
        codes = CATEGORY_CODES[k]
        skew = 1.0 / np.arange(1, codes + 1) ** 1.1  # Zipf-like: code 0 is the most common
        x[:, column] = shape.permutation(codes)[rng.choice(codes, size=rows, p=skew / skew.sum())]
        if k % 2 == 1:
            x[rng.random(rows) < 0.05, column] = np.nan
    numeric = [c for c in range(2, count) if c not in categories]
    if numeric:
        loadings = shape.normal(size=(LATENT_FACTORS, len(numeric))) * (shape.random((LATENT_FACTORS, len(numeric))) < 0.3)
        latent = rng.normal(size=(rows, LATENT_FACTORS))
        values = latent @ loadings + 0.5 * rng.normal(size=(rows, len(numeric)))
        for i, column in enumerate(numeric):
            v = values[:, i]
            if i % 4 == 3:
                v = v + rng.standard_t(2.5, size=rows)  # heavy tails
            if i % 7 == 5:
                v = np.exp(v / 2)  # log-normal, like amounts and counts
            x[:, column] = v
            x[rng.random(rows) < (0.10 if column % 10 == 0 else 0.01), column] = np.nan
    return x


def target(x: np.ndarray, seed: int) -> np.ndarray:
    """A label with many features involved, so the trees split across the whole feature set."""
    rng = np.random.default_rng(seed)
    s = np.nan_to_num(x)
    discount = s[:, 0]
    used = min(40, s.shape[1] - 1)
    weights = rng.normal(size=used)
    scaled = np.tanh(s[:, 1:used + 1] / (1.0 + np.abs(s[:, 1:used + 1]).mean(axis=0)))
    y = 2.0 * discount * (scaled[:, 0] > 0) - 1.5 * discount ** 2
    y += np.sin(scaled * 2.6) @ weights
    if s.shape[1] > 4:
        y += 0.5 * scaled[:, 1] * scaled[:, 2] + 0.3 * (s[:, 2] % 3 == 1)
    return y + rng.normal(scale=0.1, size=len(y))


def write_dataset(directory: str, total_rows: int, chunk_rows: int, count: int) -> List[str]:
    """Writes total_rows rows as files of chunk_rows rows each, ids in order; returns the paths.

    Files are generated one at a time (seeded by file index), so memory stays at one chunk
    and the first k files are the same whatever the total. Category columns are int32.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(directory, exist_ok=True)
    names = feature_names(count)
    categories = set(category_columns(count))
    paths = []
    for index in range(-(-total_rows // chunk_rows)):
        x = features(chunk_rows, count, seed=1000 + index)
        columns = [pa.array(np.arange(index * chunk_rows, (index + 1) * chunk_rows, dtype=np.int64))]
        for j in range(count):
            missing = np.isnan(x[:, j])
            values = np.where(missing, 0, x[:, j]).astype(np.int32) if j in categories else x[:, j]
            columns.append(pa.array(values, mask=missing))
        path = os.path.join(directory, f"part-{index:05d}.parquet")
        low_cardinality = [names[j] for j in sorted(categories | {0})]
        pq.write_table(pa.table(columns, names=["id"] + names), path, row_group_size=chunk_rows,
                       use_dictionary=low_cardinality)
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
