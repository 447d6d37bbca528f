"""Installs the native build's toolchain from PyPI and writes its compiler wrappers for one target.

Every native library treescore builds is compiled by zig's clang for glibc 2.17 (manylinux2014):
its symbol versions then stay within that floor whatever glibc the build machine has, and zig
links its own libc++ statically, so neither the build machine's libstdc++ nor its libgomp
travels with treescore. cmake (LightGBM needs 3.28 or newer) and ninja come from PyPI too.

Usage: toolchain.py ARCH
ARCH is x86_64 or aarch64. Prints the folder that holds `cc`, `c++`, `cmake` and `ninja` for
it; the tools are installed once into a virtualenv under the treescore cache and reused.
"""
import os
import subprocess
import sys
import venv

from pypi_download import cache_root

# The build's tools, pinned: another zig release may compile differently.
TOOLS = ["ziglang==0.17.0", "cmake==3.31.10", "ninja==1.13.2"]
GLIBC_FLOOR = "2.17"
ARCHES = ("x86_64", "aarch64")


def tools_venv() -> str:
    """The virtualenv holding TOOLS, made on first use (a finished one has a .complete marker)."""
    root = os.path.join(cache_root(), "toolchain-" + "-".join(t.replace("==", "") for t in TOOLS))
    if not os.path.isfile(os.path.join(root, ".complete")):
        venv.create(root, with_pip=True, clear=True)
        subprocess.run([os.path.join(root, "bin", "python"), "-m", "pip", "install", "--quiet", *TOOLS], check=True)
        open(os.path.join(root, ".complete"), "w").close()
    return root


def write_atomically(path: str, text: str, mode: int = 0o644) -> None:
    """Replaces `path` whole, so that a build running the old file never reads half of the new."""
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w") as f:
        f.write(text)
    os.chmod(temporary, mode)
    os.replace(temporary, path)


def wrappers(root: str, arch: str) -> str:
    """A folder with cc and c++ for `arch`, and the venv's cmake, ctest and ninja, as CMake wants them."""
    if arch not in ARCHES:
        raise SystemExit(f"toolchain: no target {arch!r}; expected one of {', '.join(ARCHES)}")
    folder = os.path.join(root, "targets", arch)
    os.makedirs(folder, exist_ok=True)
    python = os.path.join(root, "bin", "python")
    zig_cache = os.path.join(cache_root(), "zig-cache")
    # The wrappers run the driver's copy in the venv, so they work while the checkout changes.
    driver_script = os.path.join(root, "zig_driver.py")
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "zig_driver.py")) as f:
        write_atomically(driver_script, f.read())
    for name in ("cc", "c++"):
        write_atomically(os.path.join(folder, name),
                         "#!/bin/sh\n"
                         f'exec "{python}" "{driver_script}" "{zig_cache}" {name} '
                         f'-target {arch}-linux-gnu.{GLIBC_FLOOR} "$@"\n', mode=0o755)
    for tool in ("cmake", "ctest", "ninja"):
        link = os.path.join(folder, tool)
        if not os.path.lexists(link):
            os.symlink(os.path.join(root, "bin", tool), link)
    return folder


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(wrappers(tools_venv(), sys.argv[1]))
