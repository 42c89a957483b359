"""`kmigrate gateway migrate | migrations`: partitions moved between the gateway's
backends while clients keep using it; and what every gateway command shares (`--routes`,
`--partitions`). Like cli/gateway.py, the control code (and its protocol library, kio)
and the shared state (the ZooKeeper client) are imported inside the commands only."""

from __future__ import annotations

import dataclasses

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, int_list, pass_app
from kmigrate.cli.options import (
    Duration,
    check_topic_name,
    cluster_option,
    json_option,
    renamed,
    require,
)
from kmigrate.errors import ConfigError
from kmigrate.gateway.control.partition_moves import held_text

# kmigrate.gateway.control.mover.FENCE_TIMEOUT_S, without importing the mover (kio).
FENCE_TIMEOUT = "20s"

routes_option = click.option(
    "--routes",
    metavar="ZK_CONNECT[/PATH]",
    help="Where the routing table and instances live (default: clusters.yaml 'gateway:').",
)


def partition_numbers(value: str) -> list[int]:
    """``--partitions 0,1,2``: partition numbers, at least one, none negative."""
    chosen = int_list(value, "--partitions")
    if not chosen or chosen[0] < 0:
        raise ConfigError(f"--partitions {value}: give partition numbers like 0,1,2")
    return chosen


# ---------------------------------------------------------------- partition migrations


@click.command("migrate")
@click.option("--topic", required=True, metavar="TOPIC", help="The topic whose partitions move.")
@click.option(
    "--partitions", required=True, metavar="P,P,...", help="The partitions to move (e.g. 0,3)."
)
@cluster_option(help="The cluster to move the partitions to.", required=False)
@renamed("--to", "--cluster", "cluster_name")
@click.option(
    "--mode",
    type=click.Choice(["smooth", "failover"]),
    default="smooth",
    show_default=True,
    help="smooth: the origin is healthy; writes are fenced, then flipped to the target. "
    "failover: the origin is down; the last high watermark the gateway recorded becomes "
    "the migration offset.",
)
@click.option(
    "--ignore-origin",
    is_flag=True,
    help="Never read the origin's records again: reads start at the migration offset.",
)
@click.option(
    "--keep-origin",
    is_flag=True,
    help="Keep the origin's topic once aged (default: deleted when nothing is left to read).",
)
@click.option(
    "--fence-timeout",
    type=Duration(minimum=1, maximum=300),
    default=FENCE_TIMEOUT,
    show_default=True,
    metavar="DURATION",
    help="How long to wait for every instance to acknowledge the fence, then give up (1s-5m).",
)
@routes_option
@json_option
@pass_app
def migrate(
    app: AppContext,
    topic: str,
    partitions: str,
    cluster_name: str | None,
    mode: str,
    ignore_origin: bool,
    keep_origin: bool,
    fence_timeout: float,
    routes: str | None,
    as_json: bool,
) -> None:
    """Move partitions of TOPIC to cluster CLUSTER while clients keep using the gateway.

    smooth: writes of those partitions pause on every instance until all of them
    acknowledged, the origin's end offset becomes the migration offset, and writes go on
    to the target. failover (origin down): the last high watermark the gateway saw is
    the migration offset; what the origin acknowledged after it is reported as
    unavailable once it is back. Clients keep reading the same offsets: below the
    migration offset from the origin (unless --ignore-origin), above it from the target.
    """
    target = require(cluster_name, "--cluster")
    check_topic_name(topic)
    chosen = partition_numbers(partitions)
    app.settings.cluster(target)
    from kmigrate.gateway.control.shared_state import setup_of

    setup = setup_of(app.settings, routes)
    setup.home()  # refused before anything else is looked at
    from kmigrate.gateway.control import command

    asked = command.MoveRequest(
        topic, chosen, target, mode, ignore_origin, keep_origin, fence_timeout
    )
    moved = command.move(app.settings, setup, asked, render.progress)
    if as_json:
        render.print_json({"mode": mode, "moved": [dataclasses.asdict(m) for m in moved]})
        return
    first = moved[0]
    fenced = f"; {held_text(first.fence_ms, first.fence_steps_ms)}" if mode == "smooth" else ""
    render.table(
        f"migrated to {target} ({mode}){fenced}",
        ["partition", "from", "end offset", "target base", "epoch", "producers carried"],
        [
            (f"{m.topic}[{m.partition}]", m.origin, m.end_offset, m.target_base, m.epoch, m.writers)
            for m in moved
        ],
    )


@click.command("migrations")
@routes_option
@json_option
@pass_app
def migrations(app: AppContext, routes: str | None, as_json: bool) -> None:
    """Every partition migration: its record and where its offsets are served from."""
    from kmigrate.gateway.control.shared_state import setup_of

    setup = setup_of(app.settings, routes)
    from kmigrate.gateway.control import command

    shown = command.migrations(app.settings, setup)
    rows = shown["migrations"]
    if as_json:
        render.print_json(shown)
        return
    render.table(
        "partition migrations",
        ["partition", "origin", "target", "mode", "status", "end offset", "target base",
         "epoch", "left on origin", "unavailable on origin"],
        [
            (f"{r['topic']}[{r['partition']}]", r["origin"], r["target"], r["mode"], r["status"],
             r["end_offset"] if r["end_offset"] is not None else "-", r["target_base"], r["epoch"],
             "?" if r["left_on_origin"] is None else f"{r['left_on_origin']:,}",
             "{}-{}".format(r["unavailable"][0], r["unavailable"][1] - 1)
             if r["unavailable"] else "")
            for r in rows
        ],
    )  # fmt: skip
    if shown["shielded"]:
        render.out.print(f"shielded clusters: {', '.join(shown['shielded'])}")
