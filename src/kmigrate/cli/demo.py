"""`kmigrate demo`: the end-to-end migration README's `make demo` runs."""

from __future__ import annotations

from pathlib import Path

import click

from kmigrate.cli.options import json_option


@click.command("demo")
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Sandbox run directory (default .kmigrate/sandbox).",
)
@click.option(
    "--rate",
    type=click.FloatRange(1, 5000),
    default=200.0,
    show_default=True,
    help="Records/s the demo's producer writes.",
)
@click.option(
    "--via-gateway",
    is_flag=True,
    help="The producer and the group use the kmigrate gateway: the producer never stops.",
)
@json_option
def command(directory: Path | None, rate: float, via_gateway: bool, as_json: bool) -> None:
    """Migrate a live topic and its consumer group between two local clusters, consumers
    first, through promote and retire, while a producer and a consumer keep running."""
    from kmigrate.cli.demo_run import run  # the scenario: only when the demo runs
    from kmigrate.config import sandbox_dir

    run(directory or sandbox_dir(), rate, via_gateway, as_json)
