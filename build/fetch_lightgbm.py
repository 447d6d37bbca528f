"""Builds the pinned LightGBM release from its PyPI sdist as a static library for one target.

treescore's native libraries link LightGBM statically, built by the same toolchain as they are
(native/cmake/toolchain.cmake: zig's clang for glibc 2.17) and without OpenMP: Spark runs one task per core
and treescore one native thread per task, and a bundled OpenMP runtime is what tied treescore to
the build machine's glibc. Linked in and hidden, this LightGBM can clash with no other copy in
the same JVM (SynapseML's lightgbmlib brings its own lib_lightgbm.so). Arithmetic is IEEE as
written (-ffp-contract=off, no fast-math), so predictions keep the bits of the PyPI wheel's
library, which the tests compare against.

Usage: fetch_lightgbm.py VERSION ARCH DEST
DEST ends up holding include/LightGBM/*.h and lib/*.a (LightGBM and the nanoarrow it needs);
a finished DEST is reused.
"""
import glob
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

from pypi_download import pip_download
from toolchain import tools_venv, wrappers


def extract(sdist: str, version: str, into: str) -> str:
    """Unpacks the sdist's regular files under its top folder; returns that folder."""
    top = f"lightgbm-{version}/"
    with tarfile.open(sdist) as archive:
        # Copied file by file rather than extracted: tarfile's extraction filters exist only from
        # Python 3.11.4 on (Debian's 3.11 is 3.11.2), and only regular files under the top folder are wanted.
        for member in archive.getmembers():
            if not member.isfile():
                continue
            relative = os.path.normpath(member.name)
            if not member.name.startswith(top) or os.path.isabs(relative) or relative.split(os.sep)[0] == "..":
                raise SystemExit(f"fetch_lightgbm: {sdist} has a file outside {top}: {member.name}")
            target = os.path.join(into, relative)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with archive.extractfile(member) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
            os.chmod(target, member.mode & 0o755)
    return os.path.join(into, top)


def build(source: str, arch: str, build_dir: str) -> None:
    """Configures and builds LightGBM with treescore's own toolchain file, so its flags are the same.

    As a unity build of six sources a unit: LightGBM's sources share heavy headers, and compiling
    them once a unit took x86_64's build from 4 min 48 s to 2 min 54 s on two cores (batches of 4
    and 12 took 3 min 36 s and 3 min 19 s)."""
    tools = wrappers(tools_venv(), arch)
    cmake = os.path.join(tools, "cmake")
    toolchain = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "native", "cmake", "toolchain.cmake")
    subprocess.run([cmake, "-S", source, "-B", build_dir, "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={tools}/ninja",
                    f"-DCMAKE_TOOLCHAIN_FILE={os.path.abspath(toolchain)}", f"-DTREESCORE_TARGET={arch}",
                    f"-DTREESCORE_SCRIPT_PYTHON={sys.executable}",
                    "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
                    "-DUSE_OPENMP=OFF", "-DBUILD_STATIC_LIB=ON", "-DBUILD_CLI=OFF",
                    "-DCMAKE_UNITY_BUILD=ON", "-DCMAKE_UNITY_BUILD_BATCH_SIZE=6"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([cmake, "--build", build_dir, "--parallel"], check=True, stdout=subprocess.DEVNULL)


def main(version: str, arch: str, dest: str) -> None:
    if os.path.isfile(os.path.join(dest, ".complete")):
        return
    parent = os.path.dirname(os.path.abspath(dest))
    os.makedirs(parent, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=parent) as work:
        sdist = pip_download(f"lightgbm=={version}", os.path.join(work, "sdist"), "--no-binary", "lightgbm")
        source = extract(sdist, version, os.path.join(work, "src"))
        build(source, arch, os.path.join(work, "build"))
        staged = os.path.join(work, "staged")
        shutil.copytree(os.path.join(source, "include"), os.path.join(staged, "include"))
        libraries = [os.path.join(source, "lib_lightgbm.a")] + glob.glob(os.path.join(work, "build", "**", "*.a"),
                                                                         recursive=True)
        os.makedirs(os.path.join(staged, "lib"))
        for library in libraries:
            shutil.copy2(library, os.path.join(staged, "lib"))
        open(os.path.join(staged, ".complete"), "w").close()
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(staged, dest)  # atomic: a half-built tree is never mistaken for a finished one


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
