"""The CLI contract, table-driven: a bad input is refused with README's exit code, one
line on stderr naming what to fix, no traceback, and the folder (with its store) exactly
as it was.

Each case runs `kmigrate` in-process through its real entry point (`kmigrate.cli.main.main`,
the error boundary included) in a fresh folder holding `kmigrate.yaml`: two SASL clusters
that nothing answers (one password from ${KMIGRATE_CONTRACT_PASSWORD}, one literal), and
two ZooKeeper ensembles nothing answers. A command that contacts a cluster before checking
its input fails such a case: it answers "cannot reach" (exit 3), not exit 2.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PASSWORD_ENV = "KMIGRATE_CONTRACT_PASSWORD"
SECRETS = ("contract-env-secret", "contract-literal-secret")

CONFIG = f"""\
clusters:
  source:
    bootstrap_servers: 127.0.0.1:1
    timeout_s: 2
    properties:
      security.protocol: SASL_PLAINTEXT
      sasl.mechanism: SCRAM-SHA-256
      sasl.username: kmigrate
      sasl.password: ${{{PASSWORD_ENV}}}
  target:
    bootstrap_servers: 127.0.0.1:2
    timeout_s: 2
    properties:
      security.protocol: SASL_PLAINTEXT
      sasl.mechanism: PLAIN
      sasl.username: kmigrate
      sasl.password: {SECRETS[1]}
zookeeper:
  old:
    connect: 127.0.0.1:3
    timeout_s: 2
  new:
    connect: 127.0.0.1:4
    timeout_s: 2
"""


@dataclass(frozen=True)
class Case:
    """``argv`` must exit ``exit`` with one stderr line containing ``says``.
    ``files`` are written into the folder first (name -> text or bytes)."""

    argv: tuple[str, ...]
    exit: int
    says: str
    files: dict[str, str | bytes] = field(default_factory=dict)
    config: str | None = CONFIG  # the folder's kmigrate.yaml; None: no config at all

    @property
    def id(self) -> str:
        return " ".join(self.argv)[:80]


def case(*argv: str, exit: int, says: str, **kwargs: object) -> Case:
    return Case(tuple(argv), exit, says, **kwargs)  # type: ignore[arg-type]


@dataclass
class Ran:
    code: int
    stdout: str
    stderr: str


def run_in(folder: Path, argv: tuple[str, ...] | list[str]) -> Ran:
    """`kmigrate ARGV` run in ``folder`` through its entry point, output captured."""
    from kmigrate.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main(list(argv))
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(cwd)
        sys.stdin = sys.__stdin__
    return Ran(code, out.getvalue(), err.getvalue())


def snapshot(folder: Path) -> dict[str, str]:
    """Every file and folder under ``folder``: relative path -> content hash (or "dir")."""
    seen: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        seen[key] = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
    return seen


def prepare(folder: Path, c: Case) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if c.config is not None:
        (folder / "kmigrate.yaml").write_text(c.config)
    for name, content in c.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def check(folder: Path, c: Case, monkeypatch: pytest.MonkeyPatch) -> Ran:
    """Run case ``c`` in a fresh ``folder`` and assert the contract."""
    monkeypatch.setenv(PASSWORD_ENV, SECRETS[0])
    monkeypatch.delenv("KMIGRATE_CONFIG", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    prepare(folder, c)
    before = snapshot(folder)
    ran = run_in(folder, c.argv)
    assert ran.code == c.exit, f"exit {ran.code}, wanted {c.exit}: {ran.stderr!r}"
    as_json = "--json" in c.argv[: c.argv.index("--")] if "--" in c.argv else "--json" in c.argv
    assert_one_line(ran, c.says, as_json)
    assert snapshot(folder) == before, "the command changed the folder"
    return ran


def assert_one_line(ran: Ran, says: str, as_json: bool = False) -> None:
    """One line on stderr naming what to fix: ``error: ...``, or with --json one JSON
    object ``{"error", "code", "exit"}`` (and nothing on stdout)."""
    lines = [line for line in ran.stderr.splitlines() if not line.startswith("warning: ")]
    assert len(lines) == 1, f"wanted one line on stderr: {ran.stderr!r}"
    if as_json:
        error = json.loads(lines[0])
        assert set(error) == {"error", "code", "exit"}, error
        assert error["exit"] == ran.code and ran.stdout == "", (error, ran.stdout)
        assert says in error["error"], f"{says!r} not in {error['error']!r}"
    else:
        assert lines[0].startswith("error: "), lines[0]
        assert says in lines[0], f"{says!r} not in {lines[0]!r}"
    assert "Traceback" not in ran.stderr and "internal error" not in ran.stderr
    for secret in SECRETS:
        assert secret not in ran.stderr + ran.stdout


def run_cases(cases: list[Case]) -> Callable[..., None]:
    """A parametrized test over ``cases``."""

    @pytest.mark.parametrize("c", cases, ids=[c.id for c in cases])
    def test(c: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        check(tmp_path / "work", c, monkeypatch)

    return test
