"""A Spark standalone cluster on loopback, for tests: one master and some workers, started with
the `spark-class` launcher of a pyspark install (no separate Spark download).

Every daemon starts in its own session, so its process group holds it and the executor JVMs it
launches; stopping (or killing) a daemon signals the whole group. `stop()` checks that no process
of any group is left, so a test cannot leak JVMs even when it fails half way.
"""
import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(url: str, timeout: float = 5):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


def processes_in(folder: Path) -> Dict[int, str]:
    """Processes (pid: command line) whose working directory is `folder` or below it. Executors
    and the Python workers they fork run in their executor's work dir, and Python workers start a
    process group of their own, so this finds what signalling process groups could miss."""
    found = {}
    root = str(folder.resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cwd = os.readlink(entry / "cwd")
            if cwd == root or cwd.startswith(root + os.sep):
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    return found


def kill_processes_in(folder: Path, timeout: float = 30) -> Dict[int, str]:
    """SIGKILLs whatever still runs in `folder` once `timeout` has passed; returns what had to be killed."""
    deadline = time.monotonic() + timeout
    while processes_in(folder) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = processes_in(folder)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left


@dataclass
class Daemon:
    name: str
    process: subprocess.Popen
    log: Path

    def alive(self) -> bool:
        """True while any process of the daemon's group (the daemon or an executor it started) exists."""
        try:
            os.killpg(self.process.pid, 0)
            return True
        except ProcessLookupError:
            return False

    def kill(self) -> None:
        """SIGKILL the daemon and every executor it started, and reap the daemon."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        deadline = time.monotonic() + 30  # executors are reaped by init, not by us
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.1)


class StandaloneCluster:
    """A master and `workers` workers with `cores` cores each, all bound to 127.0.0.1."""

    def __init__(self, spark_home: str, root: Path, workers: int = 2, cores: int = 4, memory: str = "1g"):
        self.spark_home = spark_home
        self.root = root
        self.num_workers = workers
        self.cores = cores
        self.memory = memory
        self.master_port = free_port()
        self.master_ui_port = free_port()
        self.master_url = f"spark://127.0.0.1:{self.master_port}"
        self.master: Daemon = None
        self.workers: List[Daemon] = []
        self.work_dirs: List[Path] = []

    def _env(self) -> Dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SPARK_CONF_DIR")}
        env.update(SPARK_HOME=self.spark_home, SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="256m")
        return env

    def _start(self, name: str, main_class: str, *args: str) -> Daemon:
        log = self.root / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [os.path.join(self.spark_home, "bin", "spark-class"), main_class, *args],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self._env(),
                start_new_session=True)
        return Daemon(name, process, log)

    def start(self, timeout: float = 120) -> "StandaloneCluster":
        self.root.mkdir(parents=True, exist_ok=True)
        self.master = self._start("master", "org.apache.spark.deploy.master.Master",
                                  "--host", "127.0.0.1", "--port", str(self.master_port),
                                  "--webui-port", str(self.master_ui_port))
        for i in range(self.num_workers):
            work_dir = self.root / f"worker{i}"
            work_dir.mkdir()
            self.work_dirs.append(work_dir)
            self.workers.append(self._start(
                f"worker{i}", "org.apache.spark.deploy.worker.Worker",
                "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
                "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(work_dir),
                self.master_url))
        self._wait_for_workers(timeout)
        return self

    def _wait_for_workers(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        state = None
        while time.monotonic() < deadline:
            for daemon in [self.master, *self.workers]:
                if daemon.process.poll() is not None:
                    raise RuntimeError(f"{daemon.name} exited early:\n{daemon.log.read_text()[-4000:]}")
            with contextlib.suppress(OSError, ValueError):
                state = self.master_state()
                if state.get("aliveworkers") == self.num_workers:
                    return
            time.sleep(0.5)
        raise TimeoutError(f"{self.num_workers} workers did not register within {timeout}s; master says {state}")

    def master_state(self) -> dict:
        return http_json(f"http://127.0.0.1:{self.master_ui_port}/json/")

    def kill_worker(self, index: int) -> None:
        """Kills worker `index` and its executors at once, as a lost machine would."""
        self.workers[index].kill()

    def stop(self) -> None:
        """Kills every daemon, executor and Python worker this cluster started; raises if one outlived
        its daemon (after killing it too)."""
        daemons = [d for d in [*self.workers, self.master] if d is not None]
        for daemon in daemons:
            daemon.kill()
        left = [d.name for d in daemons if d.alive()]
        if left:
            raise RuntimeError(f"processes of {left} survived SIGKILL")
        strays = kill_processes_in(self.root)
        if strays:
            raise RuntimeError(f"processes outlived the cluster's daemons and were killed: {strays}")

    def executor_logs(self) -> Dict[str, str]:
        """The stderr of every executor the workers ran, keyed 'worker<i>/<app>/<executor id>'."""
        logs = {}
        for i, work_dir in enumerate(self.work_dirs):
            for stderr in sorted(work_dir.glob("app-*/*/stderr")):
                logs[f"worker{i}/{stderr.parent.parent.name}/{stderr.parent.name}"] = stderr.read_text(errors="replace")
        return logs

    def executor_exit(self, name: str) -> str:
        """What the worker logged when executor 'worker<i>/<app>/<executor id>' ended (its state and
        exit status), or '' while it runs."""
        worker, app, executor_id = name.split("/")
        ended = f"Executor {app}/{executor_id} finished with state "
        log = self.root / f"{worker}.log"
        return next((line.strip() for line in log.read_text(errors="replace").splitlines() if ended in line), "")

    def __enter__(self) -> "StandaloneCluster":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
