"""treescore_native, the pybind11 binding of the scorer core, against lightgbm itself."""
import numpy as np
import pytest

from conftest import NUM_FEATURES, assert_same_bits, features
import treescore_native


@pytest.mark.parametrize("kind, lightgbm_args", [
    ("prediction", {}),
    ("raw", {"raw_score": True}),
    ("leaf", {"pred_leaf": True}),
    ("contrib", {"pred_contrib": True}),
])
def test_every_kind_equals_lightgbm_bit_for_bit(binary_booster, kind, lightgbm_args):
    x = features(3_000, seed=31)
    booster = treescore_native.Booster(binary_booster.model_to_string())
    actual = booster.predict(x, kind=kind)
    expected = binary_booster.predict(x, **lightgbm_args).reshape(len(x), -1).astype(np.float64)
    assert_same_bits(actual.view(np.int64), expected.view(np.int64))


def test_shape_properties(binary_booster):
    booster = treescore_native.Booster(binary_booster.model_to_string())
    assert booster.num_features == NUM_FEATURES
    assert booster.num_classes == 1


def test_lightgbm_errors_become_python_exceptions():
    with pytest.raises(treescore_native.LightGbmError, match="LGBM_BoosterLoadModelFromString failed"):
        treescore_native.Booster("tree\nnonsense\n")


def test_a_wrong_column_count_is_a_value_error(binary_booster):
    booster = treescore_native.Booster(binary_booster.model_to_string())
    with pytest.raises(ValueError, match="the model expects 8 features but the batch has 3 columns"):
        booster.predict(np.zeros((2, 3)))


def test_a_lightgbm_loaded_first_is_not_the_one_treescore_uses():
    """Another library of LightGBM already in the process (here the lightgbm package's, imported
    first; in a JVM, SynapseML's) cannot stand in for treescore's: treescore links its LightGBM in
    and exports none of its symbols, so the lightgbm package's library is the only one mapped."""
    import subprocess
    import sys

    script = ("import lightgbm\nimport treescore_native\nprint(treescore_native.__file__)\n"
              "print('\\n'.join(sorted({l.split()[-1] for l in open('/proc/self/maps') if 'lightgbm' in l})))")
    module, *mapped = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                     check=True).stdout.split()
    assert len(mapped) == 1 and mapped[0].endswith("/lightgbm/lib/lib_lightgbm.so"), mapped
    exported = subprocess.run(["nm", "-D", "--defined-only", module], capture_output=True, text=True, check=True).stdout
    assert "PyInit_treescore_native" in exported and "LGBM_" not in exported, exported[:2000]
