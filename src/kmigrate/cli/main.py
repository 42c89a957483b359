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
    "sandbox": "kmigrate.cli.sandbox:group",
    "clusters": "kmigrate.cli.clusters:group",
    "topics": "kmigrate.cli.topics:group",
    "groups": "kmigrate.cli.groups:group",
    "mirror": "kmigrate.cli.mirror:group",
    "verify": "kmigrate.cli.verify:command",
    "plan": "kmigrate.cli.plan:group",
    "migrate": "kmigrate.cli.migrate:group",
    "demo": "kmigrate.cli.demo:command",
    "zk": "kmigrate.cli.zk:group",
    "kraft": "kmigrate.cli.kraft:group",
    "gateway": "kmigrate.cli.gateway:group",
    "reassign": "kmigrate.cli.reassign:group",
    "brokers": "kmigrate.cli.reassign:brokers_group",
    "serve": "kmigrate.cli.serve:command",
}


class LazyGroup(click.Group):
    """A group whose sub-commands load from COMMANDS on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, _, attribute = COMMANDS[cmd_name].partition(":")
            command: Any = getattr(importlib.import_module(module), attribute)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
    """Entry point: every kmigrate error becomes one line on stderr and its exit code."""
    try:
        code = cli.main(args=argv, prog_name="kmigrate", standalone_mode=False)
    except KMigrateError as exc:
        render.error(exc.message, exc.detail)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        render.error("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        render.error(exc.format_message())
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        render.error("interrupted")
        sys.exit(130)
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        render.error(
            f"internal error ({type(exc).__name__}: {exc}); "
            f"rerun with {DEBUG_ENV}=1 for a traceback and report it"
        )
        sys.exit(70)
    # A command that ends with click's Exit(n) (verify's "differs") returns n here.
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
