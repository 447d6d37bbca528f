"""treescore.top_k: the k best-scored rows of a DataFrame, overall or per group.

Exact by default: the query is the one a user would write, `ORDER BY score DESC LIMIT k` (or
`rank() <= k` over a window per group), and treescore's optimizer rule recognises it, so the
batched operator scores each row only until it is clear that the row cannot reach the top
(docs/top-k.md). The rows and their scores are those of a full score followed by a sort.

Approximate on request (Willump): a cheap scorer picks `oversample * k` candidates per group,
and only those are scored by the expensive one, which ranks them.
"""
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence, Union

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F

from treescore.functions import score
from treescore.model import Model

if TYPE_CHECKING:
    from treescore.scorable import Scorable

ScorerLike = Union[Model, "Scorable", Column]


def top_k(df: DataFrame, scorer: ScorerLike, k: int, by: Optional[Union[str, Sequence[str]]] = None, *,
          score_col: str = "score", ascending: bool = False, cheap: Optional[ScorerLike] = None,
          oversample: float = 10.0):
    """The k rows of `df` with the highest scores (the lowest where `ascending`), with the score in `score_col`.

    scorer: a Model or a scorer (Ensemble, Routed, ...), which reads the columns named like its
    features, or a score Column (treescore.score(model, cols...)). by: None for the k best rows
    overall (exactly k rows, or all of them if fewer; ties with the k-th broken as Spark's sort
    breaks them), or the column names of the groups: per group, the rows ranked k or better by
    `rank()`, so every row tying with the k-th is kept.

    Exact (cheap=None): returns a DataFrame, the rows and scores a full score and a sort give.
    A single model's prediction or raw score, and an Ensemble or Routed of models and such
    ensembles and routes, with weights of 0 or more (any combine rule and transforms), are
    scored only as far as needed; other scorers (cascades, ensembles with a negative weight or
    with a cascade inside) are scored in full (still exact).

    Approximate (cheap given): returns an ApproximateTopK. The top ceil(oversample * k) rows
    per group by `cheap` (itself an exact top-K query: ties with the last broken as for k) are
    the candidates; only they are scored by `scorer`, and the k best of those by `scorer` are
    the result, with `scorer`'s exact scores. Rows the cheap scorer misranks below the
    candidates are missed: oversample trades that risk for speed.
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"treescore: top_k needs k, a whole number of 1 or more, got {k!r}")
    groups = [by] if isinstance(by, str) else list(by or [])
    for name in groups:
        if name not in df.columns:
            raise ValueError(f"treescore: top_k groups by column '{name}', which the DataFrame does not have "
                             f"(columns: {', '.join(df.columns)})")
    if cheap is None:
        return _exact(df, _score_column(scorer), k, groups, score_col, ascending)
    if not oversample >= 1.0 or math.isinf(oversample):
        raise ValueError(f"treescore: top_k's oversample must be a finite number of 1 or more, got {oversample!r}")
    candidates_per_group = math.ceil(k * oversample)
    candidate_rows = Observation("treescore_top_k_candidates")
    cheap_col = f"__treescore_cheap_{score_col}"
    # The candidates are themselves a top-K query, by the cheap score: treescore's selection
    # passes on only the rows that can reach it, so the rows that cannot are never built.
    candidates = (_exact(df, _score_column(cheap), candidates_per_group, groups, cheap_col, ascending)
                  .drop(cheap_col).observe(candidate_rows, F.count(F.lit(1)).alias("rows")))
    result = _exact(candidates, _score_column(scorer), k, groups, score_col, ascending)
    return ApproximateTopK(result, df, candidate_rows, candidates_per_group)


@dataclass
class ApproximateTopK:
    """An approximate top-K (top_k with a cheap scorer). `df` is the result. Once an action has
    run on it, candidates() tells how many rows the cheap scorer passed on to the expensive one
    (candidates_per_group per group, or all of a smaller group); rows_scanned() counts the
    input's rows (a job of its own, run once) and rows_filtered() is the difference."""

    df: DataFrame
    source: DataFrame
    _candidates: Observation
    candidates_per_group: int
    _scanned: Optional[int] = None

    def rows_scanned(self) -> int:
        if self._scanned is None:
            self._scanned = self.source.count()
        return self._scanned

    def candidates(self) -> int:
        return int(self._candidates.get["rows"])

    def rows_filtered(self) -> int:
        return self.rows_scanned() - self.candidates()


def _score_column(scorer: ScorerLike) -> Column:
    return scorer if isinstance(scorer, Column) else score(scorer)


def _exact(df: DataFrame, scored: Column, k: int, groups: Sequence[str], score_col: str,
           ascending: bool) -> DataFrame:
    withscore = df.withColumn(score_col, scored)
    order = F.col(score_col).asc() if ascending else F.col(score_col).desc()
    if not groups:
        return withscore.orderBy(order).limit(k)
    rank_col = f"__treescore_rank_{score_col}"
    ranked = withscore.withColumn(rank_col, F.rank().over(Window.partitionBy(*groups).orderBy(order)))
    return ranked.where(F.col(rank_col) <= k).drop(rank_col)
