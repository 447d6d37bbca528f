"""build/zig_driver.py: links hold the zig cache's lock, and a zig ended by a signal runs again."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRIVER = os.path.join(ROOT, "build", "zig_driver.py")

# A stand-in for zig: it logs its arguments and whether it could take the zig cache's lock itself,
# then aborts while the abort budget in ABORTS lasts.
FAKE_ZIG = textwrap.dedent("""\
    #!{python}
    import fcntl, os, signal, sys
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(os.environ["ZIG_GLOBAL_CACHE_DIR"], "link.lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked_by_driver = False
        except BlockingIOError:
            locked_by_driver = True
    with open(os.path.join(here, "calls.log"), "a") as log:
        log.write(f"{{' '.join(sys.argv[1:])}} locked_by_driver={{locked_by_driver}}\\n")
    budget = os.path.join(here, "ABORTS")
    left = int(open(budget).read())
    if left > 0:
        open(budget, "w").write(str(left - 1))
        os.kill(os.getpid(), signal.SIGABRT)
    """)


@pytest.fixture
def fake_zig(tmp_path):
    package = tmp_path / "site" / "ziglang"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    zig = package / "zig"
    zig.write_text(FAKE_ZIG.format(python=sys.executable))
    zig.chmod(0o755)

    def run(aborts, *args):
        (package / "ABORTS").write_text(str(aborts))
        (package / "calls.log").write_text("")
        result = subprocess.run([sys.executable, DRIVER, str(tmp_path / "zig-cache"), "c++", *args],
                                env=dict(os.environ, PYTHONPATH=str(tmp_path / "site")),
                                capture_output=True, text=True)
        return result, (package / "calls.log").read_text().splitlines()
    return run


def test_a_link_holds_the_cache_lock_and_a_compile_does_not(fake_zig):
    result, calls = fake_zig(0, "main.o", "-o", "main")
    assert result.returncode == 0, result.stderr
    assert calls == ["c++ main.o -o main locked_by_driver=True"]
    result, calls = fake_zig(0, "-c", "main.cpp", "-o", "main.o")
    assert result.returncode == 0, result.stderr
    assert calls == ["c++ -c main.cpp -o main.o locked_by_driver=False"]


def test_a_zig_that_aborts_once_runs_again_and_says_so(fake_zig):
    result, calls = fake_zig(1, "main.o", "-o", "main")
    assert result.returncode == 0, result.stderr
    assert len(calls) == 2
    assert "zig c++ ended by SIGABRT (attempt 1 of 3); running it again" in result.stderr


def test_a_zig_that_keeps_aborting_fails_after_three_attempts(fake_zig):
    result, calls = fake_zig(5, "main.o", "-o", "main")
    assert result.returncode == 128 + 6
    assert len(calls) == 3
    assert result.stderr.count("running it again") == 2


def test_the_driver_refuses_an_unknown_zig_command(fake_zig):
    result = subprocess.run([sys.executable, DRIVER, "/tmp/unused", "ld"], capture_output=True, text=True)
    assert result.returncode != 0
    assert "Usage: zig_driver.py" in result.stderr
