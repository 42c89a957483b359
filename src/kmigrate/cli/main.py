"""The `kmigrate` command: global options, sub-command groups, and the error boundary."""

from __future__ import annotations

import logging
import os
import sys

import click

from kmigrate import __version__
from kmigrate.cli import (
    clusters,
    demo,
    gateway,
    groups,
    migrate,
    mirror,
    plan,
    reassign,
    render,
    sandbox,
    serve,
    topics,
    verify,
    zk,
)
from kmigrate.cli.context import AppContext
from kmigrate.errors import KMigrateError

DEBUG_ENV = "KMIGRATE_DEBUG"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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


cli.add_command(sandbox.group)
cli.add_command(clusters.group)
cli.add_command(topics.group)
cli.add_command(groups.group)
cli.add_command(mirror.group)
cli.add_command(verify.command)
cli.add_command(plan.group)
cli.add_command(migrate.group)
cli.add_command(demo.command)
cli.add_command(zk.group)
cli.add_command(gateway.group)
cli.add_command(reassign.group)
cli.add_command(reassign.brokers_group)
cli.add_command(serve.command)


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
