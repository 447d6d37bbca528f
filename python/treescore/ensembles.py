"""Ensembles, routes, cascades and what-if grids: custom inference logic that treescore runs
natively, in the same batched pass as the models, with no Python on the executors.

Each class builds a spec (the JSON format in docs/spec-format.md); `score` hands it to the
JVM. Everything nests: an ensemble of routes, a route of cascades, a grid over any of them.

    demand = Ensemble([m1, m2, m3], weights=[0.5, 0.3, 0.2], transform=["expm1", ("clip", 0, None)])
    by_market = Routed("market", {"DE": demand, "FR": fr_model}, default=demand)
    df.withColumn("units", score(by_market))
    df.withColumn("curve", score_grid(by_market, vary={"discount": [0.0, 0.05, 0.1]},
                                      derived={"price_after": "price * (1 - discount)"}, monotone="decreasing"))
"""
import json
import math
from typing import Dict, List, Optional, Sequence, Union

from pyspark.sql import Column

from treescore import cascade_fit, wire
from treescore._connect import active_connect_session
from treescore._jvm import active_jvm
from treescore.errors import jvm_errors
from treescore.functions import score
from treescore.model import Model
from treescore.scorable import Scorable

COMBINE_RULES = wire.COMBINE_RULES
TRANSFORMS = wire.ENSEMBLE_TRANSFORMS


def _node_of(item: Union[Model, "Member", Scorable], models: Dict[str, Model]) -> dict:
    if isinstance(item, Model):
        return Member(item)._node(models)
    if isinstance(item, (Member, Scorable)):
        return item._node(models)
    raise TypeError(f"treescore: expected a Model, Member or scorer, got {type(item).__name__}")


class Member:
    """A model inside an ensemble, route or cascade, optionally reading other columns for some
    of its features (columns={"price": "price_eur"}) or scoring its raw margin (raw=True)."""

    def __init__(self, model: Model, columns: Optional[Dict[str, str]] = None, raw: bool = False):
        self.model, self.columns, self.raw = model, dict(columns or {}), raw

    def _node(self, models: Dict[str, Model]) -> dict:
        if self.model._path is not None:
            # A Spark Connect model loaded by path: the server reads the file the spec names.
            node = {"type": "model", "file": self.model._path}
        else:
            models[self.model.content_hash] = self.model
            node = {"type": "model", "model": self.model.content_hash}
        if self.columns:
            node["columns"] = self.columns
        if self.raw:
            node["raw"] = True
        return node


class Ensemble(Scorable):
    """Members' outputs, each times its weight, combined by `combine`, then transformed in order.

    sum = w1*x1 + w2*x2 + ... in member order; mean = that sum / (w1 + w2 + ...); min, max and
    median take the weighted outputs. transform: "identity", "exp", "expm1", "sigmoid" or
    ("clip", lo, hi) with None for an open side, or a list of them applied in order.

    >>> Ensemble([m1, m2, m3], weights=[0.5, 0.3, 0.2], transform=["expm1", ("clip", 0, None)])
    """

    def __init__(self, members: Sequence[Union[Model, Member, Scorable]], weights: Optional[Sequence[float]] = None,
                 combine: str = "mean", transform=None):
        if combine not in COMBINE_RULES:
            raise ValueError(f"treescore: unknown combine rule '{combine}'; expected one of {', '.join(COMBINE_RULES)}")
        if weights is not None and len(weights) != len(members):
            raise ValueError(f"treescore: an ensemble of {len(members)} members needs {len(members)} weights, "
                             f"got {len(weights)}")
        self.members = list(members)
        self.weights = [float(w) for w in weights] if weights is not None else [1.0] * len(members)
        self.combine = combine
        transforms = [] if transform is None else transform
        if isinstance(transforms, (str, tuple)):
            transforms = [transforms]
        self.transforms = [_transform_node(t) for t in transforms]

    def _node(self, models):
        return {"type": "ensemble", "members": [_node_of(m, models) for m in self.members], "weights": self.weights,
                "combine": self.combine, "transforms": self.transforms}


def _transform_node(t):
    if isinstance(t, str):
        if t not in TRANSFORMS or t == "clip":
            raise ValueError(f"treescore: unknown transform '{t}'; expected one of identity, exp, expm1, sigmoid, "
                             "or ('clip', lo, hi)")
        return t
    if isinstance(t, tuple) and len(t) == 3 and t[0] == "clip":
        return {"clip": [t[1], t[2]]}
    raise ValueError(f"treescore: a transform is a name or ('clip', lo, hi), got {t!r}")


class Routed(Scorable):
    """A scorer per value of the `key` column (compared as text), with an optional default.

    A key with no scorer and no default fails the job naming the key (on_unknown_key="error",
    the default), or scores null (on_unknown_key="null"). Rows are grouped by key inside each
    batch, so each scorer is still called once per batch.
    """

    def __init__(self, key: str, routes: Dict[object, Union[Model, Member, Scorable]],
                 default: Optional[Union[Model, Member, Scorable]] = None, on_unknown_key: str = "error"):
        if on_unknown_key not in ("error", "null"):
            raise ValueError(f"treescore: on_unknown_key must be 'error' or 'null', got '{on_unknown_key}'")
        self.key, self.routes, self.default, self.on_unknown_key = key, dict(routes), default, on_unknown_key

    def _node(self, models):
        node = {"type": "route", "key": self.key, "on_unknown_key": self.on_unknown_key,
                "routes": {str(k): _node_of(v, models) for k, v in self.routes.items()}}
        if self.default is not None:
            node["default"] = _node_of(self.default, models)
        return node


class Cascade(Scorable):
    """`first` scores every row; rows it scores below accept_below or above accept_above keep
    that score, the rest are scored by `full`, compacted into one native call per batch."""

    def __init__(self, first, full, accept_below: float, accept_above: float):
        self.first, self.full = first, full
        self.accept_below, self.accept_above = float(accept_below), float(accept_above)

    @classmethod
    def fit(cls, expensive_model: Model, sample_df, target_agreement: float = 0.99, **options) -> "FittedCascade":
        """Willump's automatic cascade: a cheap model in front of `expensive_model`, fitted on the driver.

        It trains a cheap LightGBM model (cheap_trees=20 trees of cheap_leaves=15 leaves) on the
        expensive model's max_features=10 most important features (by total split gain), with the
        expensive model's own Booster.predict output on the sample as its label, then chooses
        accept_below / accept_above on a held-out part of the sample (held_out_share=0.3) so that
        the cheap stage answers as many rows as it can while the cascade agrees with the expensive
        model on at least target_agreement of the held-out rows. sample_df is a Spark or pandas
        DataFrame holding the expensive model's feature columns; at most sample_rows=100,000 of
        its rows (the first ones) are collected to the driver, then shuffled (seed=0).

        A row agrees, for a binary classifier (objective binary or cross_entropy), when the
        cascade's and the expensive model's outputs are on the same side of decision_threshold
        (default 0.5; a side is "> threshold" or "<= threshold"); for any other single-output
        model when |cascade - expensive| <= tolerance, which it then needs. Escalated rows get the
        expensive model's output, so they agree. Multiclass models are refused. cheap_params adds
        or overrides LightGBM parameters of the cheap model (default learning_rate 0.2,
        min_data_in_leaf 20). The search over thresholds is exact and two-sided: a low and a
        high tail of any sizes, cut between distinct held-out cheap outputs (treescore.cascade_fit).

        Returns a FittedCascade, scored like any Cascade, with the agreement and escalation_rate
        measured on its held_out_rows (the rows that chose the thresholds, so a fresh sample's
        agreement can come out a little lower), its features and its cheap_booster. If no accept
        region meets the target it escalates every row, and says so.

        >>> cascade = treescore.Cascade.fit(model, df.sample(0.01), target_agreement=0.99)
        >>> cascade   # FittedCascade(agreement 0.9903 ... on 30,000 held-out rows ..., escalation 18.18%; ...)
        >>> df.withColumn("p", treescore.score(cascade))
        """
        found = cascade_fit.fit(expensive_model, sample_df, target_agreement, **options)
        return FittedCascade(Model.from_booster(found.cheap_booster), expensive_model, found.accept_below,
                             found.accept_above, agreement=found.agreement, escalation_rate=found.escalation_rate,
                             held_out_rows=found.held_out_rows, target_agreement=target_agreement,
                             agrees_when=found.agrees_when, features=found.features,
                             cheap_booster=found.cheap_booster)

    def _node(self, models):
        return {"type": "cascade", "first": _node_of(self.first, models), "full": _node_of(self.full, models),
                "accept_below": _spec_number(self.accept_below), "accept_above": _spec_number(self.accept_above)}


class FittedCascade(Cascade):
    """A Cascade made by Cascade.fit, with what was measured on its held-out rows.

    It scores like any Cascade (treescore.score(fitted)). Attributes: agreement and
    escalation_rate (shares of the held_out_rows), target_agreement, agrees_when (the rule),
    features (the cheap model's features, most important first), cheap_booster (the cheap
    model as a lightgbm.Booster) and escalates_everything (no accept region met the target).
    """

    def __init__(self, cheap: Model, expensive: Model, accept_below: float, accept_above: float, *,
                 agreement: float, escalation_rate: float, held_out_rows: int, target_agreement: float,
                 agrees_when: str, features: List[str], cheap_booster):
        super().__init__(cheap, expensive, accept_below, accept_above)
        self.agreement, self.escalation_rate, self.held_out_rows = agreement, escalation_rate, held_out_rows
        self.target_agreement, self.agrees_when, self.features = target_agreement, agrees_when, list(features)
        self.cheap_booster = cheap_booster

    @property
    def escalates_everything(self) -> bool:
        return self.accept_below == cascade_fit.NO_LOW_TAIL and self.accept_above == cascade_fit.NO_HIGH_TAIL

    def __repr__(self) -> str:
        if self.escalates_everything:
            accepts = "escalates every row: no accept region of the cheap model met the target"
        elif self.accept_below == self.accept_above == cascade_fit.NO_HIGH_TAIL:
            accepts = "accepts every cheap output: the cheap model alone met the target"
        else:
            accepts = f"accepts the cheap output below {self.accept_below:.6g} or above {self.accept_above:.6g}"
        return (f"FittedCascade(agreement {self.agreement:.4f} with the expensive model on {self.held_out_rows:,} "
                f"held-out rows (target {self.target_agreement}, agreeing when {self.agrees_when}), escalation "
                f"{self.escalation_rate:.2%}; {accepts}; cheap model: {self.cheap_booster.num_trees()} trees on "
                f"{len(self.features)} features {', '.join(self.features)})")


def _spec_number(value: float):
    """JSON has no infinities: the spec writes them as the strings the JVM writes and reads."""
    return ("Infinity" if value > 0 else "-Infinity") if math.isinf(value) else value


class Grid(Scorable):
    """What-if scoring: array<double> with the scorer's output at every point of a grid.

    vary={"discount": [0.0, 0.05, ...]} varies one input; with several inputs
    (vary={"discount": [...], "shipping": [...]}) the points are their cross product in the
    order given, the first input varying slowest. Derived inputs are SQL expressions recomputed
    at each grid point and may read any varied input by its name
    ({"price_after": "price * (1 - discount)"}). monotone="increasing" or "decreasing" forces
    the curve monotone (running max or min) along the last varied input.
    """

    def __init__(self, scorer, vary: Dict[str, Sequence[float]], derived: Optional[Dict[str, str]] = None,
                 monotone: str = "none"):
        if not isinstance(vary, dict) or not vary:
            raise ValueError("treescore: vary must map at least one input to its grid values")
        if any(not isinstance(v, str) for v in (derived or {}).values()):
            raise TypeError("treescore: derived inputs are SQL expression strings, e.g. 'price * (1 - discount)'")
        self.scorer = scorer
        self.axes = [(name, [float(v) for v in values]) for name, values in vary.items()]
        self.derived, self.monotone = dict(derived or {}), monotone

    def _node(self, models):
        node = {"type": "grid", "scorer": _node_of(self.scorer, models), "derived": self.derived,
                "monotone": self.monotone}
        if len(self.axes) == 1:  # the original form, which every treescore reads
            (node["vary"], node["values"]), = self.axes
        else:
            node["vary"] = [{"input": name, "values": values} for name, values in self.axes]
        return node


class Loaded(Scorable):
    """A scorer read from a saved spec folder by treescore.load(). On Spark Connect it keeps
    the folder's path, which the server reads when it is scored or registered."""

    def __init__(self, java_scorable, path: Optional[str] = None):
        self._java_scorable, self._path = java_scorable, path

    def _java(self):
        if self._java_scorable is None:
            raise NotImplementedError("treescore: on Spark Connect a loaded scorer is read by the server; "
                                      "score or register it, but nest it only in the classic API")
        return self._java_scorable

    def _node(self, models):
        self._java()
        for java_model in active_jvm().treescore.ensemble.SpecIO.modelsOf(self._java_scorable):
            models[java_model.contentHash()] = Model(java_model)
        spec = json.loads(active_jvm().treescore.ensemble.SpecIO.specJson(self._java_scorable, True))
        return spec["scorer"]


def load(path: str) -> Loaded:
    """Loads a scorer saved with .save(path), checking every part (errors name the JSON path).

    On Spark Connect the server reads and checks the folder when the scorer is first used."""
    if active_connect_session() is not None:
        return Loaded(None, path=path)
    with jvm_errors():
        return Loaded(active_jvm().treescore.ensemble.SpecIO.load(path))


def score_grid(scorer, vary: Dict[str, Sequence[float]], derived: Optional[Dict[str, str]] = None,
               monotone: str = "none", kind: str = "prediction") -> Column:
    """Scores `scorer` (a Model or any scorer) at every grid point; see Grid. kind="contrib"
    gives every point's exact SHAP values (array<array<double>>, see treescore.score), which
    say why the curve bends.

    >>> df.withColumn("curve", score_grid(demand, vary={"discount": [0.0, 0.1, 0.2]},
    ...                                   derived={"price_after": "price * (1 - discount)"}))
    """
    return score(Grid(scorer, vary, derived, monotone), kind=kind)
