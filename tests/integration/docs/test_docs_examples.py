"""The documentation's marked shell blocks run as a user would run them, against the
session's sandbox clusters (`source` and `target`): one test per page that marks any
(docs/**/*.md and README.md; the convention is in tests/docs_blocks.py).

Each command runs in its own shell in one temporary folder per page, with the venv's
`kmigrate` first on PATH and KMIGRATE_SANDBOX_DIR naming the live sandbox. A page
fails at its first command that ends with another exit code than the page says, or
at the first promised output line that no line of its block's output matches; the
failure names the page, the line, the command, its exit code and its last lines of
output."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs_blocks import BlockError, Command, RunBlock, parse
from tests.integration.conftest import Clusters

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = Path(__file__).parent / "docs_pages"
COMMAND_TIMEOUT_S = 120
TAIL_LINES = 15


def marked_pages() -> list[Path]:
    """The pages that mention the convention's marker (parsed, and so checked, by their
    test): the docs tree and the README."""
    pages = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]
    return [page for page in pages if page.is_file() and "docs-test:" in page.read_text()]


@dataclass(frozen=True)
class Ran:
    """What one command did: its exit code and its output (stdout and stderr, as a
    terminal interleaves them)."""

    code: int
    output: str


def user_env(sandbox_dir: Path) -> dict[str, str]:
    """The environment of a user with kmigrate installed and the sandbox running: the
    venv's `kmigrate` first on PATH, no configuration named by the environment."""
    env = {key: value for key, value in os.environ.items() if key != "KMIGRATE_CONFIG"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["KMIGRATE_SANDBOX_DIR"] = str(sandbox_dir)
    env["COLUMNS"] = "200"  # wide enough that tables do not wrap
    return env


def run_command(command: Command, folder: Path, env: dict[str, str]) -> Ran:
    """``command`` in a fresh shell in ``folder``; a timeout is exit code -1."""
    try:
        done = subprocess.run(
            command.text,
            shell=True,
            executable="/bin/bash",
            cwd=folder,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        output = exc.output.decode(errors="replace") if isinstance(exc.output, bytes) else ""
        return Ran(-1, f"{output}\n(timed out after {COMMAND_TIMEOUT_S} s)")
    return Ran(done.returncode, done.stdout)


def tail(output: str) -> str:
    """The last lines of an output, indented under a failure's first line."""
    lines = output.rstrip("\n").splitlines()[-TAIL_LINES:] or ["(no output)"]
    return "\n".join(f"    {line}" for line in lines)


def run_block(block: RunBlock, where: str, folder: Path, env: dict[str, str]) -> None:
    """Run a block's commands in order and look for its promised output; raises
    AssertionError at the first command or line that does not hold."""
    outputs = []
    for command in block.commands:
        ran = run_command(command, folder, env)
        outputs.append(ran.output)
        if ran.code != command.exits:
            raise AssertionError(
                f"{where}:{command.line}: `{command.text}` exited {ran.code} "
                f"(the page expects {command.exits}); its last lines of output:\n{tail(ran.output)}"
            )
    output = "\n".join(outputs)
    ran = "; ".join(f"`{c.text}` exited {c.exits}" for c in block.commands)
    for expected in block.expected:
        if not expected.found_in(output):
            raise AssertionError(
                f"{where}:{expected.line}: no output line of the block at line {block.line} "
                f"({ran}) matches {expected.text!r}; its last lines of output:\n{tail(output)}"
            )


def run_page(page: Path, folder: Path, sandbox_dir: Path) -> None:
    """Every marked block of ``page``, in order, in ``folder``."""
    where = str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)
    try:
        blocks = parse(page.read_text())
    except BlockError as exc:
        raise AssertionError(f"{where}:{exc.line}: {exc}") from None
    env = user_env(sandbox_dir)
    assert shutil.which("kmigrate", path=env["PATH"]), "no kmigrate next to this Python"
    for block in blocks:
        run_block(block, where, folder, env)


def sandbox_of(clusters: Clusters) -> Path:
    if clusters.sandbox_dir is None:
        pytest.skip("the documentation's examples run on the sandbox, not on other clusters")
    return clusters.sandbox_dir


# The guides' examples mirror, verify and migrate on Spark: left out of `make test-fast`.
@pytest.mark.slow
@pytest.mark.parametrize("page", marked_pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_the_page_s_examples_run(clusters: Clusters, tmp_path: Path, page: Path) -> None:
    run_page(page, tmp_path, sandbox_of(clusters))


def test_a_marked_page_runs_against_the_sandbox(clusters: Clusters, tmp_path: Path) -> None:
    run_page(EXAMPLES / "sandbox-tour.md", tmp_path, sandbox_of(clusters))
    assert (tmp_path / "left-by-the-first-command.yaml").is_file()


def test_a_failing_command_names_page_line_command_exit_and_output(
    clusters: Clusters, tmp_path: Path
) -> None:
    with pytest.raises(AssertionError) as failed:
        run_page(EXAMPLES / "failing-command.md", tmp_path, sandbox_of(clusters))
    message = str(failed.value)
    assert message.startswith("tests/integration/docs/docs_pages/failing-command.md:6: ")
    assert "`kmigrate clusters describe docs-no-such-cluster` exited 2 (the page expects 0)" in (
        message
    )
    assert "unknown cluster 'docs-no-such-cluster'" in message


def test_missing_output_names_page_line_and_the_expected_text(
    clusters: Clusters, tmp_path: Path
) -> None:
    with pytest.raises(AssertionError) as failed:
        run_page(EXAMPLES / "failing-output.md", tmp_path, sandbox_of(clusters))
    message = str(failed.value)
    assert message.startswith("tests/integration/docs/docs_pages/failing-output.md:11: ")
    assert "matches 'docs-no-such-cluster ... 127.0.0.1'" in message
    assert "source" in message  # the output it had instead
