"""Runs zig's cc or c++ for the native build, guarded against zig's own races.

Concurrent zig links can crash: under parallel builds lld has died of heap corruption (an abort;
ziglang/zig#18065, open), and links that build libc++ or glibc's stubs into the shared cache have
read each other's half-written files (#13160, #18989). This build once lost four test binaries to
it, each "Subprocess aborted" while linking next to another zig. So links here take the zig
cache's lock one at a time, and an invocation that zig ends by a signal runs again, at most
twice, saying so on stderr: its output depends only on its inputs. Compiles run side by side, as
the build tool schedules them; they build nothing shared.

Usage: zig_driver.py ZIG_CACHE_DIR cc|c++ ARGS...   (build/toolchain.py writes the wrappers)
"""
import fcntl
import os
import signal
import subprocess
import sys

ATTEMPTS = 3
# The flags after which the driver stops before linking.
NO_LINK = {"-c", "-S", "-E", "-M", "-MM", "-fsyntax-only"}


def run(zig_cache: str, driver: str, args: list) -> int:
    import ziglang  # the toolchain venv's; a missing one fails here, after the usage check

    zig = os.path.join(os.path.dirname(ziglang.__file__), "zig")
    env = dict(os.environ, ZIG_GLOBAL_CACHE_DIR=zig_cache)
    os.makedirs(zig_cache, exist_ok=True)
    links = not NO_LINK.intersection(args)
    with open(os.path.join(zig_cache, "link.lock"), "w") as lock:
        if links:
            fcntl.flock(lock, fcntl.LOCK_EX)
        for attempt in range(1, ATTEMPTS + 1):
            code = subprocess.call([zig, driver, *args], env=env)
            if code >= 0 or attempt == ATTEMPTS:
                return code if code >= 0 else 128 - code
            name = signal.Signals(-code).name
            print(f"zig_driver: zig {driver} ended by {name} (attempt {attempt} of {ATTEMPTS}); running it again",
                  file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[2] not in ("cc", "c++"):
        raise SystemExit(__doc__)
    sys.exit(run(sys.argv[1], sys.argv[2], sys.argv[3:]))
