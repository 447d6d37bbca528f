"""The codes treescore's JVM side, native library and Python wrappers share, read from their one
definition (wire/codes.txt in the repository, carried in the package as wire_codes.txt).

Python passes names, not codes: each group's `names` are what users write, in code order.
"""
from importlib import resources
from typing import Dict, Tuple


def _read_names() -> Dict[str, Tuple[str, ...]]:
    text = resources.files("treescore").joinpath("wire_codes.txt").read_text(encoding="utf-8")
    groups = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        group, *members = line.split()
        groups[group] = tuple(member.split("=")[0].lower() for member in members)
    return groups


_NAMES = _read_names()

COMBINE_RULES: Tuple[str, ...] = _NAMES["Combine"]
ENSEMBLE_TRANSFORMS: Tuple[str, ...] = _NAMES["EnsembleTransform"]
PREDICT_KINDS: Tuple[str, ...] = _NAMES["PredictKind"]
ENGINES: Tuple[str, ...] = _NAMES["Engine"]
