"""Builds the JNI library once per target architecture and stages it for the jars.

The straight line of the native build: for each architecture in toolchain.ARCHES, CMake
configures native/ with the zig toolchain for that target (native/cmake/toolchain.cmake),
builds, and installs libtreescore_jni.so under

    target/native-resources/treescore/native/linux/<arch>/

which sbt copies into every jar as it is; sbt never runs CMake. Beside the folders,
`treescore/native/platforms.txt` lists what was built, one "<os>/<arch> glibc <floor>" per line:
the loader names those platforms when it meets one it has no library for.

Usage: natives.py [ARCH ...]   (every architecture when none is named)
"""
import os
import shutil
import subprocess
import sys
import time

from toolchain import ARCHES, GLIBC_FLOOR, tools_venv, wrappers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGED = os.path.join(ROOT, "target", "native-resources")
NATIVE = os.path.join(STAGED, "treescore", "native")


def build(arch: str) -> str:
    """Builds the JNI library for `arch`; returns the folder it is installed into."""
    tools = wrappers(tools_venv(), arch)
    build_dir = os.path.join(ROOT, "target", "native", arch)
    platform = os.path.join(NATIVE, "linux", arch)
    cmake = os.path.join(tools, "cmake")
    subprocess.run([cmake, "-S", os.path.join(ROOT, "native"), "-B", build_dir, "-G", "Ninja",
                    f"-DCMAKE_MAKE_PROGRAM={os.path.join(tools, 'ninja')}", f"-DTREESCORE_TARGET={arch}",
                    f"-DTREESCORE_SCRIPT_PYTHON={sys.executable}", "-DTREESCORE_BUILD_JNI=ON",
                    # dev/build adds the Python module and dev/test the C++ tests to this same
                    # folder, so that all three compile the scorer core once; a release builds neither.
                    "-DTREESCORE_BUILD_PYTHON=OFF", "-DTREESCORE_BUILD_TESTS=OFF",
                    "-DCMAKE_BUILD_TYPE=Release"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([cmake, "--build", build_dir, "--parallel"], check=True)
    shutil.rmtree(platform, ignore_errors=True)
    subprocess.run([cmake, "--install", build_dir, "--component", "jni", "--prefix", platform],
                   check=True, stdout=subprocess.DEVNULL)
    return platform


def main(arches: list) -> None:
    unknown = [a for a in arches if a not in ARCHES]
    if unknown:
        raise SystemExit(f"natives: no target {', '.join(unknown)}; expected some of {', '.join(ARCHES)}")
    os.makedirs(NATIVE, exist_ok=True)
    for arch in arches:
        began = time.monotonic()
        folder = build(arch)
        print(f"natives: built {folder} in {time.monotonic() - began:.0f} s", file=sys.stderr)
    # Every platform staged so far, so that building one architecture again keeps the others listed.
    built = sorted(a for a in ARCHES if os.path.isdir(os.path.join(NATIVE, "linux", a)))
    with open(os.path.join(NATIVE, "platforms.txt"), "w") as f:
        f.writelines(f"linux/{arch} glibc {GLIBC_FLOOR}\n" for arch in built)


if __name__ == "__main__":
    main(sys.argv[1:] or list(ARCHES))
