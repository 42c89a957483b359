"""`kmigrate` commands forked from a process that has imported kmigrate already.

A test's `kmigrate ...` step (harness.helpers.run_cli) used to start a fresh interpreter:
about 0.7 s of CPU to import click, pydantic, SQLAlchemy, confluent-kafka, rich and the
command's own modules before the command did anything, a few hundred times a run. Here a
zygote process imports every kmigrate module once, and each command is a fork of it: a
process of its own as before (its own pid and process group, working folder,
environment, stdin from /dev/null, stdout and stderr to files, the exit code `main`
gives; at its end its threads are joined and its atexit handlers run), minus the
imports. The zygote is one process with no threads when it forks.

One zygote runs one command at a time; a call while every zygote is busy (a test running
commands from several threads) starts another. KMIGRATE_TEST_FRESH_CLI=1 goes back to a
fresh interpreter per command.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

FRESH_ENV = "KMIGRATE_TEST_FRESH_CLI"

_SERVER = r"""
# kmigrate-zygote (tools/cpu_sampler.py counts its forks as kmigrate commands)
import atexit, importlib, json, os, pkgutil, sys, threading
import kmigrate

SKIP = ("kmigrate.__main__", "kmigrate.kafka.admin.child")
for info in pkgutil.walk_packages(kmigrate.__path__, "kmigrate."):
    if info.name not in SKIP:
        importlib.import_module(info.name)
import pyspark.context  # the commands that run a Spark job import it when they start one
from kmigrate.cli.main import main


def command(asked):
    # In the forked child: become the command's process, run it, end as an interpreter
    # ends, without freeing its 1,200 modules one by one (0.3 s): its threads joined,
    # its atexit handlers run, its output flushed.
    if asked["session"]:
        os.setsid()
    else:
        os.setpgid(0, 0)  # a timeout kills the command's group, as killpg would
    os.chdir(asked["cwd"])
    os.environ.clear()
    os.environ.update(asked["env"])
    flags = os.O_WRONLY | (os.O_APPEND if asked["session"] else os.O_TRUNC)
    for fd, path in ((1, asked["out"]), (2, asked["err"])):
        os.dup2(os.open(path, flags), fd)
    try:
        main(asked["argv"])
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else int(done.code is not None)
        if isinstance(done.code, str):
            print(done.code, file=sys.stderr)
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def note(path, value):
    with open(path, "a") as status:
        status.write(f"{value}\n")


replies = os.fdopen(os.dup(1), "w")
requests = os.fdopen(os.dup(0), "r")
os.dup2(os.open(os.devnull, os.O_RDWR), 0)
sys.stdin = open(os.devnull)
replies.write("ready\n")
replies.flush()
keepers = []
for line in requests:
    asked = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        replies.close()
        requests.close()
        if not asked["status"]:
            command(asked)
        # A keeper: starts the long-running command, notes its pid, then its exit code.
        child = os.fork()
        if child == 0:
            command(asked)
        note(asked["status"], child)
        note(asked["status"], os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
        os._exit(0)
    replies.write(json.dumps({"pid": pid}) + "\n")
    replies.flush()
    if asked["status"]:
        keepers.append(pid)
    else:
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"code": os.waitstatus_to_exitcode(status)}) + "\n")
        replies.flush()
    keepers = [k for k in keepers if os.waitpid(k, os.WNOHANG)[0] == 0]
"""


class _Zygote:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        self._in, self._out = self.process.stdin, self.process.stdout
        if self._out.readline() != "ready\n":
            raise RuntimeError(f"the kmigrate zygote did not start: {self.process.wait()}")

    def ask(self, argv: Sequence[str], env: Mapping[str, str], **files: object) -> int:
        asked = {"argv": list(argv), "env": dict(env), "cwd": os.getcwd(), **files}
        self._in.write(json.dumps(asked) + "\n")
        self._in.flush()
        return int(json.loads(self._out.readline())["pid"])

    def run(
        self, argv: Sequence[str], env: Mapping[str, str], timeout: float
    ) -> tuple[int, str, str]:
        with tempfile.TemporaryDirectory(prefix="kmigrate-cli-") as folder:
            out, err = Path(folder, "out"), Path(folder, "err")
            out.touch()
            err.touch()
            pid = self.ask(argv, env, out=str(out), err=str(err), session=False, status=None)
            expired = threading.Event()
            timer = threading.Timer(timeout, lambda: (expired.set(), _kill_group(pid)))
            timer.start()
            try:
                code = json.loads(self._out.readline())["code"]
            finally:
                timer.cancel()
            stdout, stderr = out.read_text(), err.read_text()
        if expired.is_set():
            raise subprocess.TimeoutExpired(["kmigrate", *argv], timeout, stdout, stderr)
        return code, stdout, stderr

    def stop(self) -> None:
        self._in.close()
        self.process.wait(timeout=30)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, 9)


_idle: list[_Zygote] = []
_all: list[_Zygote] = []
_lock = threading.Lock()


@contextmanager
def _zygote() -> Iterator[_Zygote]:
    with _lock:
        zygote = _idle.pop() if _idle else None
    if zygote is None:
        zygote = _Zygote()
        with _lock:
            _all.append(zygote)
    try:
        yield zygote
    finally:
        with _lock:
            _idle.append(zygote)


def run(argv: Sequence[str], env: Mapping[str, str], timeout: float) -> tuple[int, str, str]:
    """`kmigrate ARGV` with ``env`` in the current folder: (exit code, stdout, stderr)."""
    with _zygote() as zygote:
        return zygote.run(argv, env, timeout)


class Forked:
    """A long-running `kmigrate` command forked from a zygote, in a session of its own,
    as tests use a subprocess.Popen: ``pid``, ``poll``, ``wait``, ``returncode``."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], log: Path) -> None:
        self.args = ["kmigrate", *argv]
        self._status = Path(tempfile.mkdtemp(prefix="kmigrate-forked-")) / "status"
        self._status.touch()
        log.touch()
        with _zygote() as zygote:
            zygote.ask(argv, env, out=str(log), err=str(log), session=True,
                       status=str(self._status))  # fmt: skip
        self.returncode: int | None = None
        self.pid = int(self._wait_lines(1, 30)[0])

    def _lines(self) -> list[str]:
        text = self._status.read_text()
        return text[: text.rfind("\n") + 1].split()

    def _wait_lines(self, count: int, timeout: float | None) -> list[str]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while len(lines := self._lines()) < count:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.02)
        return lines

    def poll(self) -> int | None:
        lines = self._lines()
        if len(lines) >= 2:
            self.returncode = int(lines[1])
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self.returncode = int(self._wait_lines(2, timeout)[1])
        return self.returncode


def spawn(
    argv: Sequence[str], env: Mapping[str, str], log: Path
) -> Forked | subprocess.Popen[bytes]:
    """`kmigrate ARGV` started in a session of its own, its output appended to ``log``."""
    if not enabled():
        with open(log, "ab") as out:
            return subprocess.Popen(
                [sys.executable, "-m", "kmigrate", *argv], stdout=out,
                stderr=subprocess.STDOUT, env=dict(env), start_new_session=True,
            )  # fmt: skip
    return Forked(argv, env, log)


def enabled() -> bool:
    return os.environ.get(FRESH_ENV, "0") != "1"


@atexit.register
def _stop_all() -> None:
    for zygote in _all:
        zygote.stop()
