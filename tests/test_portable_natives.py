"""What users install runs on every Linux of manylinux2014 (glibc 2.17) and later, on x86_64 and
aarch64, whatever the build machine had: the wheel is pure Python (pip takes it on any CPython
from 3.10), every jar carries a library for each architecture, and every ELF file in the wheel's
jars needs no newer symbol version than the policy allows, and no library beyond the policy's
(libc, libm, ...). The JNI library exports only what the JVM calls, and takes exp and log from
glibc, not from zig's runtime (native/platform/glibc_math.cpp says why)."""
import os
import re
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "build"))
from toolchain import ARCHES, GLIBC_FLOOR  # noqa: E402

from conftest import RELEASE_PYTHON, built_wheel  # noqa: E402

# auditwheel's manylinux_2_17 policy: the newest symbol version of each library, per architecture.
NEWEST = {
    "x86_64": {"GLIBC": GLIBC_FLOOR, "GLIBCXX": "3.4.19", "CXXABI": "1.3.7", "GCC": "4.8.0"},
    "aarch64": {"GLIBC": "2.18", "GLIBCXX": "3.4.19", "CXXABI": "1.3.7", "GCC": "4.7.0"},
}
ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libstdc++.so.6",
                  "libgcc_s.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}
MACHINES = {"Advanced Micro Devices X86-64": "x86_64", "AArch64": "aarch64"}
# The math functions zig's runtime also defines: each must be imported from glibc.
GLIBC_MATH = ("exp", "exp2", "log")


def version(text: str) -> tuple:
    return tuple(int(p) for p in text.split("."))


def readelf(path: str, *flags: str) -> str:
    return subprocess.run(["readelf", "--wide", *flags, path], capture_output=True, text=True, check=True).stdout


def elf_files(tmp_path) -> dict:
    """Every ELF file of the built wheel and of the jars inside it, unpacked, by where it was."""
    found = {}

    def scan(archive: zipfile.ZipFile, label: str, folder):
        for name in archive.namelist():
            data = archive.read(name) if not name.endswith("/") else b""
            if data[:4] == b"\x7fELF":
                path = folder / name.replace("/", "__")
                path.write_bytes(data)
                found[f"{label}!{name}"] = str(path)
            elif name.endswith(".jar"):
                inner = folder / os.path.basename(name)
                inner.write_bytes(data)
                inner_folder = folder / (os.path.basename(name) + ".d")
                inner_folder.mkdir()
                with zipfile.ZipFile(inner) as jar:
                    scan(jar, f"{label}!{name}", inner_folder)

    with zipfile.ZipFile(built_wheel()) as wheel:
        scan(wheel, os.path.basename(built_wheel()), tmp_path)
    return found


@pytest.fixture(scope="module")
def elves(tmp_path_factory):
    return elf_files(tmp_path_factory.mktemp("elves"))


def spark_lines() -> list:
    with open(os.path.join(ROOT, "build", "spark-lines.txt")) as f:
        return [line.split()[0] for line in f if line.strip() and not line.startswith("#")]


def test_every_jar_carries_a_library_for_every_linux_architecture(elves):
    entries = {tuple(label.split("!")[1:]) for label in elves if label.count("!") == 2}
    expected = {(f"treescore/jars/treescore-spark-{line}.jar", f"treescore/native/linux/{arch}/libtreescore_jni.so")
                for line in spark_lines() for arch in ARCHES}
    assert entries == expected, sorted(entries)
    machines = {label.split("/")[-2]: MACHINES[re.search(r"Machine:\s+(.+)", readelf(path, "--file-header"))
                                                 .group(1).strip()] for label, path in elves.items()}
    assert all(folder == machine for folder, machine in machines.items()), machines


def test_every_jar_lists_the_platforms_it_carries():
    with zipfile.ZipFile(built_wheel()) as wheel:
        jars = [n for n in wheel.namelist() if n.endswith(".jar")]
        assert len(jars) == len(spark_lines()), jars
        for name in jars:
            with zipfile.ZipFile(wheel.open(name)) as jar:
                listed = jar.read("treescore/native/platforms.txt").decode().splitlines()
            assert listed == [f"linux/{arch} glibc {GLIBC_FLOOR}" for arch in sorted(ARCHES)], (name, listed)


def test_the_wheel_is_pure_python():
    assert os.path.basename(built_wheel()).endswith("-py3-none-any.whl"), built_wheel()
    with zipfile.ZipFile(built_wheel()) as wheel:
        metadata = wheel.read(next(n for n in wheel.namelist() if n.endswith(".dist-info/WHEEL"))).decode()
        loose = [n for n in wheel.namelist() if not n.endswith(".jar") and wheel.read(n)[:4] == b"\x7fELF"]
    assert "Root-Is-Purelib: true" in metadata and "Tag: py3-none-any" in metadata, metadata
    assert not loose, loose


@pytest.mark.parametrize("platform", ["manylinux2014_x86_64", "manylinux2014_aarch64"])
@pytest.mark.parametrize("python", ["3.10", "3.11", "3.12", "3.13"])
def test_pip_takes_the_wheel_for_every_supported_python_and_linux(tmp_path, python, platform):
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                           "--python-version", python, "--platform", platform, "--no-index",
                           "--find-links", RELEASE_PYTHON, "--dest", str(tmp_path), "treescore"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert os.listdir(tmp_path) == [os.path.basename(built_wheel())]


def test_every_elf_file_meets_manylinux2014(elves):
    problems = []
    for label, path in sorted(elves.items()):
        machine = re.search(r"Machine:\s+(.+)", readelf(path, "--file-header")).group(1).strip()
        newest = NEWEST[MACHINES[machine]]
        for lib, ver in set(re.findall(r"\b(GLIBCXX|GLIBC|CXXABI|GCC)_([0-9.]+)", readelf(path, "--version-info"))):
            if version(ver) > version(newest[lib]):
                problems.append(f"{label} needs {lib}_{ver}, newer than {lib}_{newest[lib]}")
        for needed in re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", readelf(path, "--dynamic")):
            if needed not in ALLOWED_NEEDED:
                problems.append(f"{label} needs {needed}, which manylinux2014 does not provide")
    assert not problems, "\n".join(problems)


def test_the_jni_library_exports_only_the_jvm_entry_points_and_takes_math_from_glibc(elves):
    libraries = [path for label, path in elves.items() if label.endswith("/libtreescore_jni.so")]
    assert libraries
    for path in libraries:
        symbols = [line.split() for line in readelf(path, "--dyn-syms").splitlines()]
        # Num: Value Size Type Bind Vis Ndx Name
        defined = {s[7] for s in symbols if len(s) >= 8 and s[6] != "UND" and s[4] in ("GLOBAL", "WEAK")}
        imported = {s[7].split("@")[0] for s in symbols if len(s) >= 8 and s[6] == "UND"}
        assert defined == {"JNI_OnLoad", "JNI_OnUnload"}, defined
        assert set(GLIBC_MATH) <= imported, imported
