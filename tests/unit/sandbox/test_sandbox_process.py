import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.helpers import wait_for
from kmigrate.sandbox.process import (
    is_ours,
    is_running,
    processes_naming,
    running_pid,
    stop_processes,
    tail,
)

# Answers "pong" to every stdin line: proof the process is alive and unsignalled.
ECHO = (
    "import sys\nprint('ready', flush=True)\nfor _ in sys.stdin:\n    print('pong', flush=True)\n"
)
# Ignores SIGTERM, then says it is ready.
STUBBORN = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)
SLEEPER = "import time\nprint('ready', flush=True)\ntime.sleep(60)\n"
# Listens in a second thread, prints its port, and ends its main thread alone (as a
# killed JVM's main thread does first): the process shows as a zombie while its
# socket still accepts connections.
HEADLESS = (
    "import ctypes, socket, threading, time\n"
    "server = socket.create_server(('127.0.0.1', 0))\n"
    "threading.Thread(target=lambda: time.sleep(60)).start()\n"
    "print('ready', flush=True)\n"
    "print(server.getsockname()[1], flush=True)\n"
    "ctypes.CDLL(None).pthread_exit(None)\n"
)


@contextmanager
def _child(script: str, *argv: str) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        # Wait until the child runs its own code: right after exec, /proc/<pid>/cmdline
        # can still be empty for a moment.
        assert proc.stdout.readline() == b"ready\n"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def _answers_ping(proc: subprocess.Popen[bytes]) -> bool:
    try:
        proc.stdin.write(b"ping\n")
        proc.stdin.flush()
    except BrokenPipeError:
        return False
    return proc.stdout.readline() == b"pong\n"


def _missing_pid() -> int:
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    return pid_max + 1


@pytest.fixture
def props(tmp_path) -> Path:
    path = tmp_path / "broker-1" / "server.properties"
    path.parent.mkdir()
    path.write_text("node.id=1\n")
    return path


# ------------------------------------------------------------------ is_ours


@pytest.mark.parametrize("pid", [None, 0])
def test_is_ours_is_false_without_a_pid(pid, props):
    assert is_ours(pid, props) is False


def test_is_ours_is_false_for_a_pid_that_does_not_exist(props):
    assert is_ours(_missing_pid(), props) is False


def test_is_ours_is_false_for_a_live_process_with_another_command_line(props):
    assert is_ours(os.getpid(), props) is False


def test_is_ours_is_true_for_a_live_process_started_with_the_path(props):
    with _child(SLEEPER, str(props)) as proc:
        assert is_ours(proc.pid, props) is True


def test_is_ours_is_false_for_a_live_process_started_with_another_path(props, tmp_path):
    with _child(SLEEPER, str(tmp_path / "broker-2" / "server.properties")) as proc:
        assert is_ours(proc.pid, props) is False


def test_is_ours_does_not_match_a_longer_path_that_contains_ours(props):
    # Another program working on a neighbouring file is not the broker.
    with _child(SLEEPER, f"{props}.bak") as proc:
        assert is_ours(proc.pid, props) is False


def test_is_ours_is_false_once_the_process_has_exited_but_is_not_reaped(props):
    with _child(SLEEPER, str(props)) as proc:
        proc.kill()
        # Wait until it is a zombie without reaping it, so its /proc entry stays.
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        assert is_ours(proc.pid, props) is False


def test_a_process_whose_main_thread_ended_runs_until_its_last_thread_is_gone(props):
    with _child(HEADLESS, str(props)) as proc:
        port = int(proc.stdout.readline())
        wait_for(lambda: _state(proc.pid) == "Z", timeout=10, message="main thread ended")
        socket.create_connection(("127.0.0.1", port), timeout=5).close()  # still listening
        assert is_running(proc.pid) is True
        proc.kill()
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        assert is_running(proc.pid) is False


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_is_ours_is_false_after_the_process_is_reaped(props):
    with _child(SLEEPER, str(props)) as proc:
        proc.kill()
        proc.wait(timeout=10)
        assert is_ours(proc.pid, props) is False


# ------------------------------------------------------------------ stop_processes


@pytest.mark.timeout(20)
def test_stop_processes_does_not_signal_a_process_that_is_not_ours(props, tmp_path):
    with _child(ECHO, str(tmp_path / "unrelated.properties")) as proc:
        assert _answers_ping(proc)
        stop_processes({proc.pid: props}, grace=2.0)
        assert proc.poll() is None
        assert _answers_ping(proc), "a stranger's process was signalled"


@pytest.mark.timeout(20)
def test_stop_processes_does_not_signal_itself(props):
    stop_processes({os.getpid(): props}, grace=1.0)


@pytest.mark.timeout(20)
def test_stop_processes_terminates_a_process_that_is_ours(props):
    with _child(SLEEPER, str(props)) as proc:
        stop_processes({proc.pid: props}, grace=10.0)
        assert proc.wait(timeout=10) == -signal.SIGTERM
        assert not is_ours(proc.pid, props)


@pytest.mark.timeout(20)
def test_stop_processes_kills_a_process_that_ignores_sigterm(props):
    with _child(STUBBORN, str(props)) as proc:
        stop_processes({proc.pid: props}, grace=0.3)
        assert proc.wait(timeout=10) == -signal.SIGKILL


@pytest.mark.timeout(20)
def test_stop_processes_stops_ours_and_spares_strangers_in_one_call(props, tmp_path):
    other = tmp_path / "broker-2" / "server.properties"
    with _child(SLEEPER, str(props)) as ours, _child(ECHO, "/elsewhere/x") as stranger:
        stop_processes({ours.pid: props, stranger.pid: other}, grace=10.0)
        assert ours.wait(timeout=10) == -signal.SIGTERM
        assert _answers_ping(stranger)


def test_stop_processes_ignores_missing_pids(props):
    stop_processes({_missing_pid(): props}, grace=1.0)


def test_stop_processes_with_nothing_to_do_returns():
    stop_processes({})


# ------------------------------------------------------------------ tail


def test_tail_returns_the_last_lines(tmp_path):
    log = tmp_path / "broker.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    assert tail(log, lines=3) == "line 97\nline 98\nline 99"


def test_tail_defaults_to_25_lines(tmp_path):
    log = tmp_path / "broker.log"
    log.write_text("".join(f"line {i}\n" for i in range(100)))
    result = tail(log).splitlines()
    assert len(result) == 25
    assert result[0] == "line 75"
    assert result[-1] == "line 99"


def test_tail_of_a_short_file_returns_all_of_it(tmp_path):
    log = tmp_path / "broker.log"
    log.write_text("only\ntwo\n")
    assert tail(log) == "only\ntwo"


def test_tail_of_a_missing_file_is_empty(tmp_path):
    assert tail(tmp_path / "missing.log") == ""


def test_tail_of_an_empty_file_is_empty(tmp_path):
    log = tmp_path / "empty.log"
    log.touch()
    assert tail(log) == ""


def test_tail_of_a_large_file_still_returns_its_end(tmp_path):
    log = tmp_path / "big.log"
    log.write_text("x" * 500_000 + "\n" + "".join(f"end {i}\n" for i in range(5)))
    assert tail(log, lines=2) == "end 3\nend 4"


def test_tail_tolerates_invalid_utf8(tmp_path):
    log = tmp_path / "bin.log"
    log.write_bytes(b"ok\n\xff\xfebad\nlast\n")
    assert tail(log, lines=2).endswith("bad\nlast")


# ------------------------------------------------------------------ processes_naming


def test_processes_naming_finds_a_process_by_a_file_under_the_folder(props, tmp_path):
    """What `sandbox down` and `status` use when sandbox.json lost a pid."""
    with _child(SLEEPER, str(props)) as proc:
        assert processes_naming(tmp_path, ["server.properties"]) == {proc.pid: props}
        assert running_pid(None, props) == proc.pid
        assert running_pid(_missing_pid(), props) == proc.pid


def test_processes_naming_ignores_other_names_neighbour_folders_and_itself(props, tmp_path):
    neighbour = Path(f"{tmp_path}0") / "broker-1" / "server.properties"  # .../sb vs .../sb0
    with _child(SLEEPER, str(neighbour)), _child(SLEEPER, str(props.with_name("other.cfg"))):
        assert processes_naming(tmp_path, ["server.properties"]) == {}
        assert running_pid(None, props) is None
    # a command line that names the folder itself (`--dir`) is not a sandbox process
    with _child(SLEEPER, "--dir", str(tmp_path)):
        assert processes_naming(tmp_path, ["server.properties"]) == {}


def test_stop_processes_returns_what_it_signalled(props, tmp_path):
    with _child(SLEEPER, str(props)) as ours, _child(SLEEPER, str(tmp_path / "x")) as stranger:
        signalled = stop_processes({ours.pid: props, stranger.pid: props}, grace=5)
        assert signalled == [ours.pid]
        assert stranger.poll() is None
