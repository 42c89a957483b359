"""`kmigrate --help` and `kmigrate COMMAND --help` load no client library: the Kafka,
ZooKeeper and SQL clients and Spark cost most of a second of start-up and --help uses
none of them (issue 53). Each case runs in a fresh interpreter: this process has them
all loaded already."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kmigrate.cli.main import COMMANDS

HEAVY = ("confluent_kafka", "pyspark", "kazoo", "sqlalchemy")

# `kmigrate ARGS --help` as the console script runs it, then one more line: the top-level
# packages the process loaded.
HELP_THEN_MODULES = """
import sys
from kmigrate.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert exc.code == 0, f"exit {exc.code}"
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""


def _loaded_by_help(*args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", HELP_THEN_MODULES, *args, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Usage: kmigrate" in done.stdout
    return set(done.stdout.splitlines()[-1].split())


@pytest.mark.parametrize("command", ["", *sorted(COMMANDS)], ids=lambda c: f"kmigrate {c}")
def test_help_loads_no_client_library(command: str) -> None:
    loaded = _loaded_by_help(*command.split())
    assert not loaded & set(HEAVY), f"`kmigrate {command} --help` imports {loaded & set(HEAVY)}"
