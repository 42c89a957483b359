"""The vocabulary's building blocks: durations, renamed flags, the destructive-step
convention, global options anywhere, errors as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from kmigrate.cli.main import hoist_global_options
from kmigrate.cli.options import (
    Duration,
    check_topic_name,
    confirm,
    confirm_options,
    names_regex,
    renamed,
    require,
)
from kmigrate.errors import ConfigError
from tests.integration.cli_contract.harness import run_in


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("90s", 90), ("15m", 900), ("1h30m", 5400), ("2.5s", 2.5)]
)
def test_durations(text: str, seconds: float) -> None:
    assert Duration().convert(text, None, None) == seconds


@pytest.mark.parametrize("text", ["", "0", "-5", "5 minutes", "1d", "m"])
def test_not_durations(text: str) -> None:
    with pytest.raises(click.BadParameter, match="not a duration"):
        Duration().convert(text, None, None)


def test_duration_bounds() -> None:
    with pytest.raises(click.BadParameter, match="shorter than 1s"):
        Duration(minimum=1).convert("0.5", None, None)


def test_global_options_move_to_the_front() -> None:
    assert hoist_global_options(["topics", "list", "--config", "c.yaml", "-v"]) == [
        "--config",
        "c.yaml",
        "-v",
        "topics",
        "list",
    ]
    assert hoist_global_options(["a", "--config=c.yaml"]) == ["--config=c.yaml", "a"]
    # After "--" nothing is an option.
    assert hoist_global_options(["a", "--", "-v"]) == ["a", "--", "-v"]


@click.command()
@click.option("--cluster", "cluster", required=False)
@renamed("--kafka", "--cluster", "cluster")
def old_and_new(cluster: str | None) -> None:
    click.echo(f"cluster={require(cluster, '--cluster')}")


def test_an_old_spelling_works_with_one_warning() -> None:
    result = CliRunner().invoke(old_and_new, ["--kafka", "prod"])
    assert result.exit_code == 0
    assert result.stdout == "cluster=prod\n"
    assert result.stderr.count("\n") == 1
    assert "--kafka is deprecated" in result.stderr and "use --cluster" in result.stderr


def test_the_new_spelling_has_no_warning_and_is_required() -> None:
    assert CliRunner().invoke(old_and_new, ["--cluster", "prod"]).stderr == ""
    missing = CliRunner().invoke(old_and_new, [])
    assert missing.exit_code == 2 and "Missing option '--cluster'" in missing.output


@click.command()
@confirm_options
def destroy(dry_run: bool, yes: bool) -> None:
    click.echo("would delete t1")
    if confirm("delete t1", dry_run=dry_run, yes=yes):
        click.echo("deleted t1")


@pytest.mark.parametrize(
    ("argv", "done"),
    [([], False), (["--dry-run"], False), (["--yes"], True), (["--apply"], True)],
)
def test_destructive_steps_need_yes_in_a_script(argv: list[str], done: bool) -> None:
    result = CliRunner().invoke(destroy, argv)
    assert result.exit_code == 0
    assert result.stdout.startswith("would delete t1\n")
    assert ("deleted t1" in result.stdout) is done
    if not done:
        assert "rerun with --yes to delete t1" in result.stderr


def test_topic_names_follow_kafkas_rule() -> None:
    assert check_topic_name("orders.v1_x-2") == "orders.v1_x-2"
    for bad in ["", ".", "..", "a b", "x" * 250, "ü"]:
        with pytest.raises(ConfigError, match="not a valid Kafka topic name"):
            check_topic_name(bad)


def test_names_regex_matches_exactly_the_names() -> None:
    import re

    pattern = re.compile(names_regex(["a.b", "c"]))
    assert pattern.fullmatch("a.b") and pattern.fullmatch("c")
    assert not pattern.fullmatch("axb") and not pattern.fullmatch("cc")


def test_errors_with_json_are_one_json_object(tmp_path: Path) -> None:
    ran = run_in(tmp_path, ["topics", "list", "--cluster", "a", "--json", "--config", "nope.yaml"])
    assert ran.code == 2 and ran.stdout == ""
    error = json.loads(ran.stderr)
    assert error["exit"] == 2 and error["code"] == "config" and "nope.yaml" in error["error"]


def test_help_lists_the_exit_codes(tmp_path: Path) -> None:
    ran = run_in(tmp_path, ["--help"])
    assert ran.code == 0
    assert "Exit codes:" in ran.stdout and "70 internal error" in ran.stdout
