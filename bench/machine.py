"""What the numbers were measured on: hardware, versions, and how busy the machine was."""
import os
import platform
import sys


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    return float("nan")


def load_average() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def cpu_pressure() -> str:
    """The kernel's share of time some task waited for a CPU, last 60 s (PSI), if available."""
    try:
        with open("/proc/pressure/cpu") as f:
            return f.readline().split()[2].split("=")[1] + "%"
    except (OSError, IndexError):
        return "unknown"


_SPIN = "import time\nt=time.perf_counter()\ns=0\nfor i in range(5_000_000): s+=i\nprint(time.perf_counter()-t)"


def parallel_speed() -> str:
    """Two busy processes at once against one alone: 1.00 means two full cores, 0.50 means one.

    The suite compares 2-core runs; on a shared VM the second core may be far from a full core.
    """
    import subprocess

    def spin(count: int):
        procs = [subprocess.Popen([sys.executable, "-c", _SPIN], stdout=subprocess.PIPE, text=True)
                 for _ in range(count)]
        return [float(p.communicate()[0]) for p in procs]

    alone = spin(1)[0]
    together = max(spin(2))
    return f"{alone / together:.2f} (one busy process {alone:.2f} s; two at once {together:.2f} s each)"


def describe(spark) -> dict:
    import lightgbm
    import numpy
    import pandas
    import pyarrow

    import treescore

    def ask_jvm(question):
        try:
            return question()
        except Exception:  # the JVM may have died during the run
            return "unknown"

    return {
        "CPU": _cpu_model(),
        "cores": f"{os.cpu_count()} (Spark local[2]; the limit uses 2 threads)",
        "RAM": f"{_ram_gib():.1f} GiB",
        "OS": f"{platform.system()} {platform.release()}",
        "Python": sys.version.split()[0],
        "Spark": ask_jvm(lambda: spark.version),
        "Java": ask_jvm(lambda: spark._jvm.java.lang.System.getProperty("java.version")),
        "lightgbm": lightgbm.__version__,
        "treescore": treescore.__version__,
        "pandas / pyarrow / numpy": f"{pandas.__version__} / {pyarrow.__version__} / {numpy.__version__}",
    }
