"""Running a kmigrate command and SIGKILLing it (its whole process group) at a kill point:
the runner the kill tests and bench/killpoints.py share. The command's output goes to a
log file as it comes; its progress lines decide the moment (harness.killpoints)."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from harness.killpoints import Chain, Kill, KillPoint, boundary, matches

_END = object()


class Watched:
    """A command running in its own process group, its stderr lines timed as they come."""

    def __init__(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.log = open(log, "a")  # noqa: SIM115 (closed by the reader at the end)
        self.proc = subprocess.Popen(
            argv, stdout=self.log, stderr=subprocess.PIPE, text=True, start_new_session=True,
            env={**os.environ, "COLUMNS": "200", **(env or {})},
        )  # fmt: skip
        self.lines: queue.Queue[object] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.write(line)
            self.log.flush()
            self.lines.put(line)
        self.lines.put(_END)

    def next_line(self, until: float) -> str | object | None:
        """The next line, _END once the command closed its output, None at ``until``."""
        try:
            return self.lines.get(timeout=max(0.0, until - time.monotonic()))
        except queue.Empty:
            return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)


def kmigrate(config: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "kmigrate", "--config", str(config), *args]


def run_until(
    argv: list[str],
    log: Path,
    point: KillPoint,
    kill_at: Callable[[str], str | None],
    timeout_s: float = 600.0,
) -> Kill:
    """Run ``argv`` and kill it at the first line ``kill_at`` names a boundary for (when
    ``point`` has no delay), else ``point.delay_s`` after that line (or, with no
    ``point.after``, after the start); a Kill with the exit code if it ended first."""
    watched = Watched(argv, log)
    started = time.monotonic()
    give_up = started + timeout_s
    due = started + point.delay_s if point.after is None and point.delay_s else None
    last, last_at = None, started
    entered = False  # the run printed its first phase (the one it resumes in)
    while True:
        line = watched.next_line(min(due or give_up, give_up))
        now = time.monotonic()
        if line is _END:
            code = watched.proc.wait(60)
            return Kill(point, None, last, now - last_at, exit_code=code)
        if line is None:  # the delay ran out, or the whole run's time
            watched.kill()
            if due is None or now < due:
                raise AssertionError(f"{argv[5:7]} ran {timeout_s:g}s without {point.describe()}")
            return Kill(point, None, last, now - last_at)
        assert isinstance(line, str)
        at = kill_at(line)
        phase = (boundary(line) or "").startswith("phase ")
        if due is not None and at is None and phase and entered:
            # a delay drawn inside the phase a run resumes in never lets it into the next
            # phase: killed there, still inside (a kill at a boundary it is not)
            watched.kill()
            return Kill(point, None, last, now - last_at)
        entered = entered or phase
        if boundary(line):
            last, last_at = boundary(line), now
        if at is not None and (point.delay_s == 0 or point.after is None):
            watched.kill()
            return Kill(point, at, at, 0.0)
        if at is not None and due is None:
            due = now + point.delay_s


def kill_at_point(
    argv: list[str],
    log: Path,
    point: KillPoint,
    timeout_s: float = 600.0,
    *,
    may_finish: bool = False,
) -> Kill:
    """A test's run: killed at (or ``delay_s`` after) ``point.after`` (the start when
    None); unless ``may_finish``, the command must not finish before it reached the point."""
    seen: list[str] = []

    def at(line: str) -> str | None:
        if not seen and matches(point, line):
            seen.append(line)
            return boundary(line)
        return None

    kill = run_until(argv, log, point, at, timeout_s)
    if kill.exit_code is not None and not seen and point.after is not None and not may_finish:
        raise AssertionError(
            f"the command ended (exit {kill.exit_code}) before {point.describe()}: "
            + log.read_text()[-2000:]
        )
    print(f"killed {kill.where} ({point.describe()})")
    return kill


def chain_run(argv: list[str], log: Path, chain: Chain, timeout_s: float = 900.0) -> Kill:
    """One run of ``chain``: killed at the next boundary not killed at yet, or inside a
    step as the chain's seed asks; recorded in the chain."""
    kill = run_until(argv, log, chain.next_point(), chain.kill_here, timeout_s)
    chain.record(kill)
    return kill
