"""Run one long-lived local service process: start, wait until ready, stop by its own PID.

Every service (Kafka, Kafka Connect, MariaDB, the metastore) is started through
`ServiceProcess`, so they all keep their files the same way: `build/run/<service>/`
holds the config the code wrote, the data dir, a pid file and `<service>.log`
(stdout and stderr together).
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import random
import signal
import socket
import subprocess
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from devkit import run_root
from hudi_cdc.errors import TransientError

log = logging.getLogger(__name__)


class ServiceError(TransientError):
    """A local service (Kafka, metastore, Trino) failed to start or answer; the log tail is attached."""

    def __init__(self, service: str, message: str, log_tail: str = "") -> None:
        self.service = service
        self.log_tail = log_tail
        tail = f"\n--- last lines of the {service} log ---\n{log_tail}" if log_tail else ""
        super().__init__(f"{service}: {message}{tail}")


Probe = Callable[[], bool]

# Services started by this Python process and not yet stopped: stopped at interpreter exit,
# so a test session that dies on an exception leaves no JVM behind.
_LIVE: dict[int, ServiceProcess] = {}


def run_dir(service: str) -> Path:
    """The folder a service keeps its config, data and log in: `build/run/<service>` (`devkit.run_root`)."""
    return run_root() / service


# Ports handed out by this process, so two services started together never get the same one.
_HANDED_OUT: set[int] = set()
_PORTS = random.Random()  # seeded from the OS, so parallel test workers draw different ports
_LOWEST_PORT = 10_000


@functools.cache
def _ephemeral_port_low() -> int:
    """The lowest port the kernel gives client sockets (Linux's default when unreadable); read once."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("0.0.0.0", port))  # on every address: a service bound to any of them takes the port
        except OSError:
            return False
    return True


def free_port() -> int:
    """A TCP port that is free right now and that no client socket will take before the service binds it.

    The OS's own pick (bind to port 0) comes from the ephemeral range, where any outgoing
    connection on the machine (a Kafka client, another test run) may take the port between
    this call and the service's bind: a metastore then failed with "Address already in use".
    So the port is drawn below the ephemeral range, and never twice in one process.
    """
    # a kernel whose ephemeral range starts very low leaves no room below it: draw from the
    # thousand ports above 10,000 anyway rather than fail
    highest = max(_ephemeral_port_low() - 1, _LOWEST_PORT + 1000)
    for _ in range(200):
        port = _PORTS.randint(_LOWEST_PORT, highest)
        if port not in _HANDED_OUT and _bindable(port):
            _HANDED_OUT.add(port)
            return port
    raise ServiceError("ports", f"no free TCP port found between {_LOWEST_PORT} and {highest}")


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """True when something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def java17_home() -> Path:
    """The Java 17 home Kafka, Connect and Hadoop run on (`JAVA17` overrides the Debian default)."""
    candidates = [os.environ.get("JAVA17", ""), "/usr/lib/jvm/java-17-openjdk-amd64"]
    candidates += sorted(str(p) for p in Path("/usr/lib/jvm").glob("java-17-openjdk*"))
    for candidate in candidates:
        if candidate and (Path(candidate) / "bin" / "java").is_file():
            return Path(candidate)
    raise ServiceError("java", "no Java 17 found (set JAVA17 or run `make system-packages`)")


def started_services() -> list[ServiceProcess]:
    """Services started by this Python process that have not been stopped."""
    return list(_LIVE.values())


def ensure_directory_free(service: str, directory: Path) -> None:
    """Raise ServiceError if a live process started from `directory` still owns it.

    The owner is the PID in `<directory>/<service>.pid` whose command line names the directory
    (so a recycled PID does not count). Call before wiping anything in the directory.
    """
    pid_path = directory / f"{service}.pid"
    try:
        pid = int(pid_path.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        return
    if str(directory) in cmdline:
        raise ServiceError(
            service,
            f"{directory} is in use by running pid {pid}; stop it (kill {pid}) or give this service another directory",
        )


class ServiceProcess:
    """One local service process with its log file under `build/run/<name>/`.

    Usage: `start()`, then `wait_ready(probe)`; `stop()` ends exactly this PID.
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        directory: Path | None = None,
        stop_signal: signal.Signals = signal.SIGTERM,
    ) -> None:
        self.name = name
        self.stop_signal = stop_signal
        """The signal `stop()` sends first (PostgreSQL's fast shutdown is SIGINT: its SIGTERM
        waits for every client, a replication connection included, to leave)."""
        self.command = list(command)
        self.env = dict(env) if env is not None else None
        self.directory = directory or run_dir(name)
        self.cwd = cwd or self.directory
        self.log_path = self.directory / f"{name}.log"
        self.pid_path = self.directory / f"{name}.pid"
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        """The PID of the started process (None before `start()`)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """True while the process has not exited."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Launch the command with stdout and stderr appended to `log_path`.

        Refuses to start when the pid file names a live process: another session owns this
        run dir, and starting would clobber its files.
        """
        if self.running:
            raise ServiceError(self.name, f"already running with pid {self.pid}")
        ensure_directory_free(self.name, self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env} if self.env is not None else None
        log_file = open(self.log_path, "ab")  # noqa: SIM115 - open for the child's lifetime
        log_file.write(f"\n=== {time.strftime('%H:%M:%S')} start: {' '.join(self.command)}\n".encode())
        log_file.flush()
        try:
            self._proc = subprocess.Popen(
                self.command,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.cwd,
                env=env,
            )
        except OSError as exc:
            log_file.close()
            raise ServiceError(self.name, f"cannot run {self.command[0]}: {exc}") from exc
        self._log_file = log_file
        self.pid_path.write_text(str(self._proc.pid))
        _LIVE[id(self)] = self
        log.info("%s started, pid %d, log %s", self.name, self._proc.pid, self.log_path)

    def wait_ready(self, probe: Probe, *, timeout: float, interval: float = 0.2) -> float:
        """Poll `probe` until it returns True; return the seconds waited since the call.

        Raises ServiceError (with the log tail) if the process exits first or the timeout
        passes; on timeout the process is stopped.
        """
        began = time.monotonic()
        deadline = began + timeout
        while True:
            if not self.running:
                code = self._proc.returncode if self._proc is not None else None
                self._forget()
                raise ServiceError(self.name, f"exited with code {code} before it was ready", self.log_tail())
            try:
                if probe():
                    waited = time.monotonic() - began
                    log.info("%s ready after %.1fs", self.name, waited)
                    return waited
            except Exception as exc:  # a probe failure only means "not yet"
                log.debug("%s probe: %s", self.name, exc)
            if time.monotonic() >= deadline:
                tail = self.log_tail()
                self.stop()
                raise ServiceError(self.name, f"not ready after {timeout:.0f}s; stopped it", tail)
            time.sleep(interval)

    def stop(self, timeout: float = 15.0) -> None:
        """Send `stop_signal` to this PID, wait up to `timeout` seconds, then kill it. Idempotent."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(self.stop_signal)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning(
                    "%s (pid %d) ignored %s for %.0fs; killing it",
                    self.name,
                    proc.pid,
                    self.stop_signal.name,
                    timeout,
                )
                proc.kill()
                proc.wait(5)
            log.info("%s stopped, pid %d, exit code %s", self.name, proc.pid, proc.returncode)
        self._forget()

    def _forget(self) -> None:
        _LIVE.pop(id(self), None)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        owned = self._proc is not None and self.pid_path.exists()
        if owned and self.pid_path.read_text().strip() == str(self.pid):
            self.pid_path.unlink()

    def log_tail(self, n: int = 60) -> str:
        """The last `n` lines of the log ('' when there is none yet)."""
        return log_tail(self.log_path, n)


def run_setup_step(
    service: str, step: str, command: Sequence[str], log_path: Path, timeout: float = 120
) -> None:
    """Run a one-off set-up command (e.g. a database's data-dir initialisation) into the service's log.

    Raises ServiceError with the log's tail when it exits non-zero.
    """
    with open(log_path, "ab") as out:
        out.write(f"=== {time.strftime('%H:%M:%S')} {step}: {' '.join(command)}\n".encode())
        out.flush()
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False)
    if result.returncode != 0:
        raise ServiceError(service, f"{step} failed (exit {result.returncode})", log_tail(log_path))


def log_tail(path: Path, n: int = 60) -> str:
    """The last `n` lines of a text file ('' when it does not exist)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return "".join(deque(handle, maxlen=n)).rstrip("\n")
    except FileNotFoundError:
        return ""


@atexit.register
def _stop_leftovers() -> None:
    for service in list(_LIVE.values()):
        service.stop(timeout=5)


class LocalService:
    """Lifecycle shared by the local services: launch and wait, stop by PID, context manager.

    Subclasses implement `start()` (prepare files, build the command, call `_launch`).
    """

    stop_timeout: float = 15.0
    _process: ServiceProcess | None = None
    startup_seconds: float | None = None
    """Wall time of the last `start()` (preparation + JVM start + readiness)."""

    def start(self) -> Self:
        raise NotImplementedError

    def _launch(
        self, process: ServiceProcess, probe: Probe, *, timeout: float, began: float, interval: float = 0.2
    ) -> None:
        """Start `process`, wait for `probe`; on failure stop it (its log tail is in the error)."""
        process.start()
        self._process = process
        try:
            process.wait_ready(probe, timeout=timeout, interval=interval)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began

    def log_tail(self, n: int = 60) -> str:
        """The last `n` lines of the service's log."""
        return self._process.log_tail(n) if self._process else ""

    @property
    def pid(self) -> int | None:
        """The service process's PID while it runs (a bench measures its CPU)."""
        return self._process.pid if self._process else None

    def stop(self) -> None:
        """Stop the service process (by its PID). Idempotent."""
        if self._process is not None:
            self._process.stop(timeout=self.stop_timeout)
            self._process = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
