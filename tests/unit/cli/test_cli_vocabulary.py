"""Every command's `--help` speaks one vocabulary (src/kmigrate/cli/options.py): the same
concept has the same flag, every command has --json, every destructive command has the
dry-run/--yes convention, durations accept 90s/15m/1h everywhere."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from kmigrate.cli.main import cli
from kmigrate.cli.options import Duration

# Commands that delete or undo something: they show what would change and go ahead only
# with --yes (or a "y" on a terminal).
DESTRUCTIVE = {
    "brokers add",
    "brokers drain",
    "gateway route delete",
    "groups migrate",
    "kraft finalize",
    "kraft revert",
    "migrate retire",
    "migrate rollback",
    "reassign cancel",
    "sandbox down",
    "zk cleanup",
    "zk migrate",
}

# Spellings replaced by the vocabulary: they may live on only hidden (deprecated).
RETIRED = {"--kafka", "--apply", "--start", "--at", "--refresh", "--refresh-interval", "--to"}

# Options that name one configured cluster.
CLUSTER_FLAGS = {"--cluster", "--source", "--target", "--group-home"}

# Option names whose value is a length of time.
TIME_FLAGS = {
    "--timeout",
    "--interval",
    "--max-unavailable",
    "--grace",
    "--wave-duration",
    "--quiet-period",
    "--fence-timeout",
    "--age-every",
}


def commands() -> Iterator[tuple[str, click.Command]]:
    def walk(command: click.Command, path: list[str]) -> Iterator[tuple[str, click.Command]]:
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                yield from walk(sub, [*path, name])
        else:
            yield " ".join(path), command

    yield from walk(cli, [])


ALL = sorted(commands(), key=lambda pair: pair[0])
IDS = [name for name, _ in ALL]


def visible_options(command: click.Command) -> dict[str, click.Option]:
    found: dict[str, click.Option] = {}
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            for name in [*param.opts, *param.secondary_opts]:
                found[name] = param
    return found


@pytest.mark.parametrize(("name", "command"), ALL, ids=IDS)
def test_help_renders(name: str, command: click.Command) -> None:
    result = CliRunner().invoke(cli, [*name.split(), "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage: " in result.output


@pytest.mark.parametrize(("name", "command"), ALL, ids=IDS)
def test_every_command_has_json(name: str, command: click.Command) -> None:
    assert "--json" in visible_options(command), f"{name} has no --json"


@pytest.mark.parametrize(("name", "command"), ALL, ids=IDS)
def test_retired_spellings_are_hidden(name: str, command: click.Command) -> None:
    shown = RETIRED & set(visible_options(command))
    assert not shown, f"{name} still shows {sorted(shown)}"


@pytest.mark.parametrize(("name", "command"), ALL, ids=IDS)
def test_one_flag_per_concept(name: str, command: click.Command) -> None:
    for flag, option in visible_options(command).items():
        if option.metavar in ("NAME", "CLUSTER") and flag.startswith("--"):
            assert flag in CLUSTER_FLAGS, f"{name} {flag}: a cluster is --cluster"
        if flag in ("--topics", "--groups"):
            assert option.metavar == "REGEX", f"{name} {flag} takes a REGEX"
        if flag in TIME_FLAGS:
            assert isinstance(option.type, Duration), f"{name} {flag}: not a DURATION"
        if flag == "--wait":
            assert option.is_flag or option.flag_value is not None, f"{name} --wait: a flag"
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    for argument in arguments:
        assert argument.name not in ("cluster", "topics", "groups"), (
            f"{name}: {argument.name} is a flag, not an argument"
        )


@pytest.mark.parametrize("name", sorted(DESTRUCTIVE))
def test_destructive_commands_confirm(name: str) -> None:
    command = dict(ALL)[name]
    options = visible_options(command)
    assert "--dry-run" in options and "--yes" in options, f"{name}: needs --dry-run and --yes"


@pytest.mark.parametrize(("name", "command"), ALL, ids=IDS)
def test_only_destructive_commands_ask(name: str, command: click.Command) -> None:
    if name not in DESTRUCTIVE:
        assert "--yes" not in visible_options(command), f"{name}: add it to DESTRUCTIVE"
