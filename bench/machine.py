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


def describe(spark) -> dict:
    import lightgbm
    import numpy
    import pandas
    import pyarrow

    import treescore

    return {
        "CPU": _cpu_model(),
        "cores": f"{os.cpu_count()} (Spark local[2]; the limit uses 2 threads)",
        "RAM": f"{_ram_gib():.1f} GiB",
        "OS": f"{platform.system()} {platform.release()}",
        "Python": sys.version.split()[0],
        "Spark": spark.version,
        "Java": spark._jvm.java.lang.System.getProperty("java.version"),
        "lightgbm": lightgbm.__version__,
        "treescore": treescore.__version__,
        "pandas / pyarrow / numpy": f"{pandas.__version__} / {pyarrow.__version__} / {numpy.__version__}",
    }
