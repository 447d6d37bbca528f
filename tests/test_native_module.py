"""treescore._native, the pybind11 binding of the scorer core, against lightgbm itself."""
import numpy as np
import pytest

from conftest import NUM_FEATURES, assert_same_bits, features
from treescore import _native


@pytest.mark.parametrize("kind, lightgbm_args", [
    ("prediction", {}),
    ("raw", {"raw_score": True}),
    ("leaf", {"pred_leaf": True}),
    ("contrib", {"pred_contrib": True}),
])
def test_every_kind_equals_lightgbm_bit_for_bit(binary_booster, kind, lightgbm_args):
    x = features(3_000, seed=31)
    booster = _native.Booster(binary_booster.model_to_string())
    actual = booster.predict(x, kind=kind)
    expected = binary_booster.predict(x, **lightgbm_args).reshape(len(x), -1).astype(np.float64)
    assert_same_bits(actual.view(np.int64), expected.view(np.int64))


def test_shape_properties(binary_booster):
    booster = _native.Booster(binary_booster.model_to_string())
    assert booster.num_features == NUM_FEATURES
    assert booster.num_classes == 1


def test_lightgbm_errors_become_python_exceptions():
    with pytest.raises(_native.LightGbmError, match="LGBM_BoosterLoadModelFromString failed"):
        _native.Booster("tree\nnonsense\n")


def test_a_wrong_column_count_is_a_value_error(binary_booster):
    booster = _native.Booster(binary_booster.model_to_string())
    with pytest.raises(ValueError, match="the model expects 8 features but the batch has 3 columns"):
        booster.predict(np.zeros((2, 3)))
