"""The real `kmigrate` process, as a shell starts it: what in-process cases cannot see
(a library that writes ./.hypothesis on import, the console script's exit path), and bad
input to `kmigrate` itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.cli_contract.harness import (
    CONFIG,
    PASSWORD_ENV,
    SECRETS,
    case,
    run_cases,
    snapshot,
)

CASES = [
    case("topics", "list", exit=2, says="Missing option '--cluster'"),
    case("topics", "list", "--cluster", "nope", exit=2, says="unknown cluster 'nope'"),
    case("topics", "list", "--cluster", "source", "--config", "missing.yaml", exit=2,
         says="missing.yaml"),
    case("nosuch", exit=2, says="No such command"),
]  # fmt: skip

test_bad_input = run_cases(CASES)


def kmigrate(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kmigrate", *argv],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, PASSWORD_ENV: SECRETS[0]},
    )


@pytest.mark.parametrize(
    "argv",
    [
        ("--help",),
        ("gateway", "start", "--help"),
        ("migrate", "status", "--help"),
        ("serve", "--help"),
        ("migrate", "status"),  # reads the store: there is none, and it stays so
        ("mirror", "status", "--link", "nope", "--json"),
    ],
    ids=" ".join,
)
def test_a_process_leaves_the_folder_as_it_was(tmp_path: Path, argv: tuple[str, ...]) -> None:
    (tmp_path / "kmigrate.yaml").write_text(CONFIG)
    before = snapshot(tmp_path)
    done = kmigrate(tmp_path, *argv)
    assert "Traceback" not in done.stderr
    assert done.returncode in (0, 4), done.stderr
    assert snapshot(tmp_path) == before, "the command left files behind"


def test_a_json_error_from_the_console_script(tmp_path: Path) -> None:
    (tmp_path / "kmigrate.yaml").write_text(CONFIG)
    done = kmigrate(tmp_path, "mirror", "status", "--link", "nope", "--json")
    assert done.returncode == 4 and done.stdout == ""
    assert json.loads(done.stderr) == {
        "error": json.loads(done.stderr)["error"],
        "code": "not-found",
        "exit": 4,
    }
    assert "nope" in json.loads(done.stderr)["error"]
