"""`kmigrate demo`: the end-to-end walk-through README's `make demo` runs."""

from __future__ import annotations

from pathlib import Path

import click

from kmigrate.cli import render
from kmigrate.cli.topics import print_topics
from kmigrate.config import sandbox_dir
from kmigrate.demo import run_demo
from kmigrate.kafka.admin import ClusterAdmin


@click.command("demo")
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Sandbox run directory (default .kmigrate/sandbox).",
)
@click.option("--records", type=click.IntRange(1), default=10_000, show_default=True)
def command(directory: Path | None, records: int) -> None:
    """Start two local clusters, put records on `source`, and show both clusters' topics."""
    result = run_demo(directory or sandbox_dir(), records, render.progress)
    for name in ("source", "target"):
        with ClusterAdmin(result.settings.cluster(name)) as admin:
            print_topics(admin, name)
    where = result.settings.path.parent if result.settings.path else directory
    render.out.print(
        f"demo finished in {result.seconds:.1f}s; the clusters keep running.", soft_wrap=True
    )
    render.out.print(
        f"  inspect: kmigrate --config {result.settings.path} topics list --cluster source",
        soft_wrap=True,
    )
    render.out.print(f"  stop:    kmigrate sandbox down --dir {where}", soft_wrap=True)
