"""The docs folder stays true to the code: every setting documented, the API reference generates."""
import inspect
import os
import re
import subprocess

import pytest

import treescore

MODEL_NAME_KEY = "spark.treescore.model.<name>"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(*parts) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def keys_in_code() -> set:
    """Every spark.treescore.* key a source file of the product names."""
    keys = set()
    for folder in ("jvm/src/main", "python/treescore"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                if name.endswith((".scala", ".java", ".py")):
                    keys |= set(re.findall(r"spark\.treescore\.[A-Za-z][A-Za-z0-9.]*[A-Za-z0-9]", read(dirpath, name)))
    # spark.treescore.model.<name> is a family of keys, one per registered model name.
    return {MODEL_NAME_KEY if k.startswith("spark.treescore.model") else k for k in keys}


def test_every_setting_the_code_reads_is_in_the_configuration_reference():
    keys = keys_in_code()
    assert "spark.treescore.batch.rows" in keys  # the scan itself works
    documented = set(re.findall(r"`(spark\.treescore\.[A-Za-z0-9.<>]+)`", read("docs", "configuration.md")))
    assert keys - documented == set(), "settings missing from docs/configuration.md"
    assert documented - keys == set(), "docs/configuration.md documents settings the code does not read"


def test_every_public_python_name_has_a_docstring():
    undocumented = [name for name in treescore.__all__ if not inspect.getdoc(getattr(treescore, name))]
    assert undocumented == []


def test_docs_pages_link_to_files_that_exist():
    for page in os.listdir(os.path.join(ROOT, "docs")):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", read("docs", page)):
            assert os.path.exists(os.path.join(ROOT, "docs", target)), f"docs/{page} links to missing {target}"


@pytest.mark.slow
def test_api_reference_generates_from_docstrings_and_scaladoc(tmp_path):
    done = subprocess.run([os.path.join(ROOT, "dev", "docs"), str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    python_page = (tmp_path / "python" / "treescore.html").read_text()
    for name in treescore.__all__:
        assert f'id="{name}"' in python_page, f"{name} missing from the Python API reference"
    assert 'id="ScoreTransformer"' in (tmp_path / "python" / "treescore" / "ml.html").read_text()
    scala_functions = (tmp_path / "scala" / "treescore" / "functions$.html").read_text()
    assert "scoreGrid" in scala_functions and "score" in scala_functions
