"""`kmigrate mirror start | status | stop | promote`."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.options import json_option, max_unavailable_option
from kmigrate.errors import ConfigError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.mirror.control import (
    check_not_running,
    link_dir,
    new_link,
    promote,
    stop_mirror,
)
from kmigrate.mirror.job import MirrorJob, MirrorOptions, Progress
from kmigrate.mirror.process import spawn_mirror
from kmigrate.mirror.report import link_json
from kmigrate.mirror.status import LinkStatus, link_status, run_state
from kmigrate.store import Store, store_for
from kmigrate.store.links import list_links, require_link, save_link
from kmigrate.store.runs import get_run

link_option = click.option("--link", "link_name", metavar="NAME", help="Link name.")


@click.group("mirror")
def group() -> None:
    """Copy topics partition for partition, exactly once, with an exact offset map."""


@group.command("start")
@click.option("--source", required=True, metavar="CLUSTER", help="Cluster to copy from.")
@click.option("--target", required=True, metavar="CLUSTER", help="Cluster to copy to.")
@click.option("--topics", required=True, metavar="REGEX", help="Source topics (whole-name regex).")
@click.option("--link", "link_name", metavar="NAME", help="Link name (default SOURCE-to-TARGET).")
@click.option(
    "--start",
    default="earliest",
    show_default=True,
    metavar="earliest|latest|@EPOCH_MS",
    help="Where to begin partitions the link has never mirrored.",
)
@click.option("--master", metavar="URL", help="Spark master (default from the config).")
@click.option("--replication-factor", type=click.IntRange(1), help="For created target topics.")
@click.option("--allow-gaps", is_flag=True, help="Record retention losses instead of stopping.")
@click.option(
    "--refresh-interval",
    type=click.FloatRange(0.5),
    default=30.0,
    show_default=True,
    help="Seconds between looks for new topics, partitions and promote requests.",
)
@click.option(
    "--producer-property",
    "producer_props",
    multiple=True,
    metavar="KEY=VALUE",
    help="librdkafka setting for the target producer (e.g. compression.type=lz4).",
)
@click.option(
    "--max-offsets-per-batch", type=click.IntRange(1), help="Cap on source offsets per batch."
)
@max_unavailable_option("15m")
@click.option("--detach", is_flag=True, help="Run in the background; logs go to the link's folder.")
@pass_app
def start(app: AppContext, /, **opts: Any) -> None:
    """Mirror SOURCE topics matching REGEX to TARGET until stopped (Ctrl-C or `mirror stop`).

    Safe to run again after any crash: it resumes exactly where the offset map ends.
    While the source or target stops answering (a broker restart, a leader election)
    it waits, says so, and goes on by itself; an outage longer than --max-unavailable
    stops it (exit 3), resumable.
    """
    settings = app.settings
    producer = _properties(opts["producer_props"])
    link = new_link(
        settings,
        source=opts["source"],
        target=opts["target"],
        topics=opts["topics"],
        name=opts["link_name"],
        start=opts["start"],
        replication_factor=opts["replication_factor"],
    )
    store = store_for(settings)
    check_not_running(store, link.name)
    save_link(store, link)
    folder = link_dir(settings, link.name)
    folder.mkdir(parents=True, exist_ok=True)
    if opts["detach"]:
        _detach(store, link.name, folder)
        return
    options = MirrorOptions(
        refresh_interval_s=opts["refresh_interval"],
        allow_gaps=opts["allow_gaps"],
        producer=producer,
        max_offsets_per_batch=opts["max_offsets_per_batch"],
        master=opts["master"],
        max_unavailable_s=opts["max_unavailable"],
    )
    job = MirrorJob(settings, store, link, options, folder, render.progress, _Ticker())
    render.progress(f"link {link.name}: {link.source} -> {link.target}, topics '{link.topics}'")
    job.run()
    render.progress(f"link {link.name}: stopped")


class _Ticker:
    """Attached progress: one line every few seconds, not one per heartbeat."""

    def __init__(self, every_s: float = 5.0) -> None:
        self.every_s = every_s
        self.last = 0.0

    def __call__(self, progress: Progress) -> None:
        if time.monotonic() - self.last >= self.every_s:
            self.last = time.monotonic()
            render.progress(
                f"mirrored {progress.mirrored:,} records, {progress.records_per_s:,.0f} records/s "
                f"over {progress.partitions} partition(s)"
            )


def _properties(pairs: tuple[str, ...]) -> dict[str, str]:
    props = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--producer-property '{pair}' must be KEY=VALUE")
        props[key.strip()] = value.strip()
    return props


def _detach(store: Store, name: str, folder: Path) -> None:
    argv = [a for a in sys.argv[1:] if a != "--detach"]
    pid = spawn_mirror(store, name, argv, folder)
    render.out.print(f"link {name}: mirror running as process {pid}; log {folder / 'mirror.log'}")


@group.command("status")
@link_option
@click.option("--offline", is_flag=True, help="Do not ask the clusters (store only).")
@json_option
@pass_app
def status(app: AppContext, link_name: str | None, offline: bool, as_json: bool) -> None:
    """Per link, topic and partition: end offsets, lag, rate and the mirror's state."""
    store = store_for(app.settings)
    links = [require_link(store, link_name)] if link_name else list_links(store)
    results = [_status(app, store, link, offline) for link in links]
    if as_json:
        render.print_json({"links": [link_json(s) for s in results]})
        return
    if not results:
        render.out.print("no links yet; start one with `kmigrate mirror start`")
    for s in results:
        _print_status(s)


def _status(app: AppContext, store: Store, link: Any, offline: bool) -> LinkStatus:
    if offline:
        return link_status(store, link, None, None)
    with (
        ClusterAdmin(app.cluster(link.source)) as source,
        ClusterAdmin(app.cluster(link.target)) as target,
    ):
        return link_status(store, link, source, target)


def _print_status(s: LinkStatus) -> None:
    reason = f" ({s.reason})" if s.reason else ""
    rate = f", {s.run.records_per_s:,.0f} records/s" if s.run and s.state == "running" else ""
    render.out.print(
        f"[bold]link {s.link.name}[/bold]: {s.link.source} -> {s.link.target}, "
        f"topics '{s.link.topics}', mirror {s.state}{reason}{rate}, lag {_n(s.lag)}"
    )
    topic_state = {t.topic: t.state.value for t in s.topics}
    render.table(
        None,
        [
            "topic",
            "partition",
            "state",
            "source end",
            "mirrored to",
            "target end",
            "lag",
            "lag s",
            "records/s",
        ],
        [
            (
                p.topic,
                p.partition,
                topic_state.get(p.topic),
                _n(p.source_end),
                p.mirrored_to,
                _n(p.target_end),
                _n(p.lag),
                "" if p.lag_s is None else f"{p.lag_s:.1f}",
                f"{p.records_per_s:,.0f}",
            )
            for p in s.partitions
        ],
    )
    for name, condition in s.unavailable.items():
        render.out.print(
            f"[yellow]cluster '{name}' unavailable now[/yellow] ({condition}): its offsets "
            "are not shown"
        )
    for g in s.gaps:
        render.out.print(
            f"[red]gap[/red] {g.topic}[{g.partition}] source offsets "
            f"{g.source_start}..{g.source_end - 1}: {g.reason}"
        )


def _n(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


@group.command("stop")
@link_option
@click.option("--timeout", type=float, default=120.0, show_default=True, help="Seconds to wait.")
@pass_app
def stop(app: AppContext, link_name: str | None, timeout: float) -> None:
    """Stop a link's mirror between two batches (it resumes exactly on the next start)."""
    store = store_for(app.settings)
    name = link_name or _only_link(store)
    if stop_mirror(store, name, timeout, render.progress):
        render.out.print(f"link {name}: mirror stopped")
    else:
        state, reason = run_state(get_run(store, name))
        render.out.print(
            f"link {name}: no mirror running ({state}{': ' + reason if reason else ''})"
        )


def _only_link(store: Store) -> str:
    links = list_links(store)
    if len(links) != 1:
        names = ", ".join(link.name for link in links) or "none"
        raise ConfigError(f"pass --link NAME (links: {names})")
    return links[0].name


@group.command("promote")
@click.option("--link", "link_name", required=True, metavar="NAME", help="Link name.")
@click.option("--topics", required=True, metavar="REGEX", help="Topics to promote.")
@click.option("--timeout", type=float, default=300.0, show_default=True, help="Seconds to wait.")
@json_option
@pass_app
def promote_cmd(
    app: AppContext, link_name: str, topics: str, timeout: float, as_json: bool
) -> None:
    """Stop mirroring TOPICS once their lag is 0 and mark them writable on the target."""
    store = store_for(app.settings)
    done = promote(store, app.settings, link_name, topics, timeout, render.progress)
    if as_json:
        render.print_json({"link": link_name, "promoted": done})
    else:
        render.out.print(f"link {link_name}: promoted {', '.join(done)}")
