"""The `kmigrate` command: global options, sub-command groups, and the error boundary."""

from __future__ import annotations

import importlib
import logging
import os
import sys
from typing import Any

import click

from kmigrate import __version__
from kmigrate.cli import render
from kmigrate.cli.context import AppContext
from kmigrate.errors import KMigrateError

DEBUG_ENV = "KMIGRATE_DEBUG"

# Each sub-command's module is imported only when that command runs (or for --help):
# the gateway's protocol library, Spark and the web stack cost a second of start-up
# that `kmigrate clusters list` should not pay.
COMMANDS = {
    "sandbox": ("kmigrate.cli.sandbox:group", "Real Apache Kafka and ZooKeeper on this machine."),
    "clusters": ("kmigrate.cli.clusters:group", "Clusters from the configuration; check them."),
    "topics": ("kmigrate.cli.topics:group", "Topics of a cluster."),
    "groups": ("kmigrate.cli.groups:group", "Consumer groups of a cluster; move them."),
    "mirror": ("kmigrate.cli.mirror:group", "Copy topics exactly once, with an exact offset map."),
    "verify": ("kmigrate.cli.verify:command", "Compare source and target record by record."),
    "plan": ("kmigrate.cli.plan:group", "Write a migration plan and check it."),
    "migrate": (
        "kmigrate.cli.migrate:group",
        "Run a planned migration one guarded step at a time.",
    ),
    "demo": ("kmigrate.cli.demo:command", "Migrate a live topic between two local clusters."),
    "zk": ("kmigrate.cli.zk:group", "Move a ZooKeeper-mode cluster to another ensemble."),
    "kraft": ("kmigrate.cli.kraft:group", "Take a ZooKeeper-mode cluster to KRaft."),
    "gateway": ("kmigrate.cli.gateway:group", "Route topic partitions to backend clusters."),
    "reassign": ("kmigrate.cli.reassign:group", "Move replicas between brokers."),
    "brokers": ("kmigrate.cli.brokers:brokers_group", "Add, drain or list brokers."),
    "quotas": ("kmigrate.cli.quotas:group", "Client quotas: list, copy, compare."),
    "users": ("kmigrate.cli.users:group", "SCRAM users: list, create on another cluster."),
    "schemas": ("kmigrate.cli.schemas:group", "Schema Registry: copy with the same ids, compare."),
    "serve": ("kmigrate.cli.serve:command", "Web console, REST API and metrics."),
}

# Options of `kmigrate` itself, accepted anywhere on the line (`kmigrate topics list
# --config c.yaml` as well as `kmigrate --config c.yaml topics list`).
GLOBAL_VALUE_OPTIONS = ("--config",)
GLOBAL_FLAGS = ("-v", "--verbose")

EXIT_CODES = """\b
Exit codes:
  0  done (a listing with nothing in it too)
  1  verify, quotas/schemas compare: the two sides differ; users copy: some not created
  2  configuration or usage: fix the command line or clusters.yaml
  3  cluster unreachable, credentials rejected, not authorized, or unavailable too long
  4  a named topic, group, link, plan or operation does not exist
  5  conflict: exists already, group active, not translatable yet, in another phase
  6  other Kafka failure
  7  sandbox (jars, broker start, nothing running)
  8  metadata store cannot be opened or written
  9  mirror stopped to protect data
  70 internal error (KMIGRATE_DEBUG=1 for the traceback): report it
  130 interrupted (Ctrl-C)
With --json, an error is one JSON object on stderr: {"error", "code", "exit"}."""


def hoist_global_options(args: list[str]) -> list[str]:
    """``args`` with kmigrate's own options moved to the front, wherever they were
    (up to a ``--``)."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        name = arg.split("=", 1)[0]
        if name in GLOBAL_VALUE_OPTIONS:
            if "=" in arg or i + 1 == len(args):
                front.append(arg)
            else:
                front += [arg, args[i + 1]]
                i += 1
        elif arg in GLOBAL_FLAGS:
            front.append(arg)
        else:
            rest.append(arg)
        i += 1
    return front + rest


class LazyGroup(click.Group):
    """A group whose sub-commands load from COMMANDS on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # From the table, not the modules: `kmigrate --help` imports no sub-command.
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, _, attribute = COMMANDS[cmd_name][0].partition(":")
            command: Any = getattr(importlib.import_module(module), attribute)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_CODES
)
@click.option(
    "--config",
    "config",
    type=click.Path(path_type=str),
    default=None,
    help="clusters.yaml to use (default: $KMIGRATE_CONFIG, ./kmigrate.yaml, "
    "then the running sandbox's).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log what kmigrate does to stderr.")
@click.version_option(__version__, prog_name="kmigrate")
@click.pass_context
def cli(ctx: click.Context, config: str | None, verbose: bool) -> None:
    """Move live Kafka topics, consumer groups and partitions between clusters,
    without losing or repeating a record, and prove it."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    ctx.obj = AppContext(config)


def main(argv: list[str] | None = None) -> None:
    """Entry point: every kmigrate error becomes one line on stderr (one JSON object
    with --json) and its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
    render.fresh()
    try:
        code = cli.main(args=args, prog_name="kmigrate", standalone_mode=False)
    except KMigrateError as exc:
        fail(exc.message, exc.code, exc.exit_code, as_json, exc.detail)
    except click.exceptions.Abort:
        fail("aborted", "aborted", 130, as_json)
    except click.ClickException as exc:
        fail(exc.format_message(), "usage", exc.exit_code, as_json)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        fail("interrupted", "interrupted", 130, as_json)
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        fail(
            f"internal error ({type(exc).__name__}: {exc}); "
            f"rerun with {DEBUG_ENV}=1 for a traceback and report it",
            "internal",
            70,
            as_json,
        )
    # A command that ends with click's Exit(n) (verify's "differs") returns n here.
    sys.exit(code if isinstance(code, int) else 0)


def fail(message: str, code: str, exit_code: int, as_json: bool, detail: str | None = None) -> None:
    if as_json:
        render.json_error(message, code, exit_code)
    else:
        render.error(message, detail)
    sys.exit(exit_code)


if __name__ == "__main__":
    main()
