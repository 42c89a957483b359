"""Helpers shared by the tests and the benchmarks: unique names, waiting on conditions,
running the CLI."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from harness import zygote

T = TypeVar("T")

# Kafka's Java tools and clients as the tests start them: the client compiler and the
# serial collector start a JVM on about half the CPU of the defaults (the suite starts
# a few hundred JVMs on two cores); what a tool or client does is unchanged.
JVM_QUICK = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
JAVA = ("java", *JVM_QUICK)


def java_on(jars: Path) -> list[str]:
    """`java` for a Kafka tool or client from ``jars``: JAVA, mapping the classes the
    sandbox archived from the same jars (sandbox/cds.py), and ``jars`` as the class path."""
    from kmigrate.sandbox import cds
    from kmigrate.sandbox.process import java_executable

    archive = cds.jvm_flags(java_executable(), jars, cds.KAFKA, node=False)
    return [java_executable(), *JVM_QUICK, *archive, "-cp", f"{jars}/*"]


def unique(prefix: str) -> str:
    """A topic or group name no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def seeded() -> random.Random:
    """Random kill moments; replay a failure with KMIGRATE_TEST_SEED=<printed seed>."""
    seed = int(os.environ.get("KMIGRATE_TEST_SEED", time.time()))
    print(f"seed {seed}")
    return random.Random(seed)


def wait_for(
    condition: Callable[[], T],
    *,
    timeout: float,
    message: str | Callable[[], str],
    interval: float = 0.2,
) -> T:
    """Poll ``condition`` until it returns something truthy; fail with ``message`` on
    timeout (a callable: what it says then, e.g. what is still missing)."""
    deadline = time.monotonic() + timeout
    last: T = condition()
    while not last:
        if time.monotonic() > deadline:
            said = message() if callable(message) else message
            raise AssertionError(f"timed out after {timeout}s: {said} (last: {last!r})")
        time.sleep(interval)
        last = condition()
    return last


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str


def run_cli(
    *args: str, config: str | None = None, env: dict[str, str] | None = None, timeout: float = 180
) -> CliResult:
    """Run the real `kmigrate` command in a process of its own, as a user would: forked
    from a process that imported kmigrate already (harness/zygote.py), or a fresh
    interpreter with KMIGRATE_TEST_FRESH_CLI=1."""
    argv = ["--config", config, *args] if config else list(args)
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    if zygote.enabled():
        return CliResult(*zygote.run(argv, full_env, timeout))
    done = subprocess.run(
        [sys.executable, "-m", "kmigrate", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        check=False,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


# A command started as from a shell: SIGINT unblocked and at its default, whatever the
# test process inherited (a CI runner or a pytest-xdist worker may ignore it, and an
# ignored SIGINT stays ignored across exec), so only the command's own Ctrl-C handling
# is under test.
_INTERRUPTIBLE = (
    "import os, signal, sys; signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
    "signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.executable, sys.argv[1:])"
)


def interruptible(*argv: str) -> list[str]:
    """``python ARGV`` as a command line whose process takes SIGINT as a shell's would."""
    return [sys.executable, "-c", _INTERRUPTIBLE, sys.executable, *argv]
