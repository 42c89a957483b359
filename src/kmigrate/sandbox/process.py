"""Broker, ZooKeeper and Schema Registry processes: format storage, start them
detached, tell whether one lives, stop it.

A pid alone is not proof: pids are reused. A process counts as ours only while
/proc/<pid>/cmdline still names its own file (a broker's server.properties, a
registry's registry.yaml), so ``stop`` can never signal a stranger's process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from kmigrate.errors import BrokerStartError, SandboxError
from kmigrate.sandbox import cds

HEAP_ENV = "KMIGRATE_SANDBOX_HEAP"
# More JVM flags for the sandbox's brokers, ZooKeeper nodes and storage formatting,
# e.g. the test suite's "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC": quicker to start
# on few cores, slower at full load (benchmarks leave it unset).
JVM_FLAGS_ENV = "KMIGRATE_SANDBOX_JVM_FLAGS"
MAIN_CLASS = "kafka.Kafka"
ZOOKEEPER_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
STORAGE_TOOL = "kafka.tools.StorageTool"


def java_executable() -> str:
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home, "bin", "java") if home else None
    if candidate is not None and candidate.is_file():
        return str(candidate)
    found = shutil.which("java")
    if found is None:
        raise SandboxError("Java is not installed (no JAVA_HOME, no java on PATH); install JDK 17+")
    return found


def java_command(
    jars: Path, main: str, args: Sequence[str], jvm_flags: Sequence[str] = ()
) -> list[str]:
    return [java_executable(), *jvm_flags, "-cp", f"{jars}/*", main, *args]


def _archive(jars: Path, role: str, *, node: bool = True) -> list[str]:
    """The class-data archive flags of a JVM of ``role`` (sandbox/cds.py)."""
    return cds.jvm_flags(java_executable(), jars, role, node=node)


def format_storage(
    jars: Path, properties: Path, cluster_id: str, scram: Sequence[str], log_flag: str
) -> subprocess.Popen[bytes]:
    """Start formatting one node's log dirs; the caller waits on the returned process."""
    # "--cluster-id=ID": an id may begin with "-" (base64url), which argparse takes for a flag
    args = ["format", f"--cluster-id={cluster_id}", "-c", str(properties), "--ignore-formatted"]
    for credential in scram:
        args += ["--add-scram", credential]
    log = properties.with_name("format.log").open("wb")
    return subprocess.Popen(
        java_command(
            jars,
            STORAGE_TOOL,
            args,
            ["-Xmx256m", *_extra_flags(), *_archive(jars, cds.KAFKA, node=False), log_flag],
        ),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )


def wait_formatted(
    processes: Sequence[tuple[Path, subprocess.Popen[bytes]]], timeout: float = 120
) -> None:
    for properties, process in processes:
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            code = -1
        if code != 0:
            log = properties.with_name("format.log")
            raise BrokerStartError(
                f"formatting storage for {properties.parent.name} failed; see {log}",
                detail=tail(log),
            )


def start_broker(jars: Path, properties: Path, log_flag: str) -> int:
    """Start a broker detached from this process (it outlives the CLI); returns its pid."""
    heap = os.environ.get(HEAP_ENV, "512m")
    extra = _extra_flags()
    gc = [] if any("GC" in f for f in extra) else ["-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20"]
    flags = [f"-Xmx{heap}", "-Xms128m", *gc, "-Djava.awt.headless=true", *extra]
    flags += [*_archive(jars, cds.KAFKA), log_flag]
    return start_detached(
        java_command(jars, MAIN_CLASS, [str(properties)], flags),
        properties.with_name("broker.log"),
    )


def start_zookeeper(jars: Path, zoo_cfg: Path, log_flag: str) -> int:
    """Start one ZooKeeper server detached (QuorumPeerMain on ``zoo.cfg``); its pid."""
    extra = [f for f in _extra_flags() if "GC" not in f]
    flags = ["-Xmx128m", "-XX:+UseSerialGC", "-Djava.awt.headless=true", *extra]
    flags += [*_archive(jars, cds.ZOOKEEPER), log_flag]
    return start_detached(
        java_command(jars, ZOOKEEPER_MAIN, [str(zoo_cfg)], flags),
        zoo_cfg.with_name("zookeeper.log"),
    )


def _extra_flags() -> list[str]:
    return os.environ.get(JVM_FLAGS_ENV, "").split()


def start_detached(command: list[str], log_path: Path, env: Mapping[str, str] | None = None) -> int:
    """Start ``command`` in its own session (it outlives the CLI), in the folder of
    ``log_path``, which gets its output; ``env``: its whole environment (None: ours).
    Returns its pid."""
    with log_path.open("ab") as out:
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=log_path.parent,
            env=env,
        )
    return process.pid


@contextlib.contextmanager
def recording() -> Iterator[None]:
    """Hold a Ctrl-C back while a process is started and its pid recorded: one that
    lands between the two would leave a process nobody knows of. The interrupt is
    delivered as soon as the block ends. (Only the main thread receives signals.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            signal.raise_signal(signal.SIGINT)


def is_ours(pid: int | None, properties: Path) -> bool:
    """True while ``pid`` is alive and is the broker started with ``properties``."""
    if not is_running(pid):
        return False
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return str(properties).encode() in args


def processes_naming(folder: Path, names: Sequence[str]) -> dict[int, Path]:
    """Every live process (but this one) whose command line names a file called one of
    ``names`` under ``folder``: pid -> that file. How `down` and a failed `up` find a
    process of theirs that sandbox.json does not list (a pid lost to an interrupt, a
    state file written by another run): the file proves it ours as ``is_ours`` does."""
    prefix = f"{folder}/"
    found: dict[int, Path] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile, or not ours to read
        for arg in args:
            text = arg.decode(errors="replace")
            if text.startswith(prefix) and Path(text).name in names:
                if is_running(int(entry)):
                    found[int(entry)] = Path(text)
                break
    return found


def running_pid(recorded: int | None, path: Path) -> int | None:
    """The pid of the live process started with ``path``: the recorded one while it is
    ours, else one a command line proves ours (sandbox.json may have lost it)."""
    if is_ours(recorded, path):
        return recorded
    return next(iter(processes_naming(path.parent, [path.name])), None)


def is_running(pid: int | None) -> bool:
    """True while ``pid`` exists and is not a zombie (whoever it belongs to).

    A JVM's main thread turns zombie as soon as it is killed, while its other threads
    are still exiting and its sockets still accept connections: the process is running
    until its last thread is gone.
    """
    if not pid:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[1].split()[0] != "Z":
        return True
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def stop_processes(pids: Mapping[int, Path], grace: float = 20.0) -> list[int]:
    """SIGTERM every process that is still ours, then SIGKILL whatever outlived
    ``grace``; returns once they are gone (or 10 s after the SIGKILL) with the pids it
    signalled."""
    alive = {pid: p for pid, p in pids.items() if is_ours(pid, p)}
    signalled = sorted(alive)
    for pid in alive:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while alive and time.monotonic() < deadline:
        alive = {pid: p for pid, p in alive.items() if is_running(pid)}
        time.sleep(0.1)
    for pid, p in alive.items():
        if is_ours(pid, p):
            _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while any(is_running(pid) for pid in alive) and time.monotonic() < deadline:
        time.sleep(0.1)
    return signalled


def kill_process(pid: int, properties: Path, timeout: float = 30.0) -> None:
    """SIGKILL the broker started with ``properties`` (no controlled shutdown); returns
    once its last thread is gone, so that its ports no longer accept connections."""
    if not is_ours(pid, properties):
        return
    _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while is_running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def failure_excerpt(path: Path, lines: int = 12) -> str:
    """What a user needs from a failed broker's log: its ERROR/FATAL lines, each with
    the line after it (usually the exception), else the last lines."""
    text = tail(path, lines=2000).splitlines()
    picked: list[str] = []
    for i, line in enumerate(text):
        if "] ERROR " in line or "] FATAL " in line:
            picked += text[i : i + 2]
    return "\n".join(picked[-lines:]) if picked else "\n".join(text[-lines:])


def tail(path: Path, lines: int = 25) -> str:
    """The last lines of a log file ('' if it does not exist)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 256 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
