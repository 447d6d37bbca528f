"""What users install runs on every Linux of manylinux2014 (glibc 2.17) and later, whatever the
build machine had: every ELF file in the built wheel and in each of its jars needs no newer
symbol version than the policy allows, and no library beyond the policy's (libc, libm, ...).
The JNI library exports only what the JVM calls, and takes exp and log from glibc, not from
zig's runtime (native/platform/glibc_math.cpp says why)."""
import glob
import os
import re
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "build"))
from toolchain import GLIBC_FLOOR  # noqa: E402

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
    wheels = glob.glob(os.path.join(ROOT, "dist", "treescore-*.whl"))
    assert len(wheels) == 1, f"expected exactly one built wheel in dist/, found {wheels}"
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

    with zipfile.ZipFile(wheels[0]) as wheel:
        scan(wheel, os.path.basename(wheels[0]), tmp_path)
    return found


@pytest.fixture(scope="module")
def elves(tmp_path_factory):
    return elf_files(tmp_path_factory.mktemp("elves"))


def spark_lines() -> list:
    with open(os.path.join(ROOT, "build", "spark-lines.txt")) as f:
        return [line.split()[0] for line in f if line.strip() and not line.startswith("#")]


def test_every_jar_carries_a_linux_x86_64_library(elves):
    entries = {tuple(label.split("!")[1:]) for label in elves if label.count("!") == 2}
    expected = {(f"treescore/jars/treescore-spark-{line}.jar", "treescore/native/linux/x86_64/libtreescore_jni.so")
                for line in spark_lines()}
    assert entries == expected, sorted(entries)


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
