"""`kmigrate mirror start | status | stop | promote`.

The mirror's use cases are imported by the commands that run them: `kmigrate mirror
--help` loads this module and should not load Spark, the Kafka clients or the store.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.options import (
    Duration,
    duration_option,
    json_option,
    limit_option,
    max_unavailable_option,
    renamed,
    require,
    timeout_option,
    topics_option,
)
from kmigrate.cli.position import check_position
from kmigrate.errors import ConfigError
from kmigrate.mirror import copier
from kmigrate.model.links import Link, compile_topics

if TYPE_CHECKING:
    from kmigrate.mirror.job import Progress
    from kmigrate.mirror.status import LinkStatus

link_option = click.option("--link", "link_name", metavar="LINK", help="Link name.")


@click.group("mirror")
def group() -> None:
    """Copy topics partition for partition, exactly once, with an exact offset map."""


@group.command("start")
@click.option("--source", required=True, metavar="CLUSTER", help="Cluster to copy from.")
@click.option("--target", required=True, metavar="CLUSTER", help="Cluster to copy to.")
@topics_option("Source topics: a regex that must match the whole name.", required=True)
@click.option("--link", "link_name", metavar="LINK", help="Link name (default SOURCE-to-TARGET).")
@click.option(
    "--from",
    "start",
    metavar="POSITION",
    help="Where to begin partitions the link has never mirrored: earliest (default), "
    "latest, @EPOCH_MS or an ISO time.",
)
@renamed("--start", "--from", "start")
@click.option("--master", metavar="URL", help="Spark master (default from the config).")
@click.option("--replication-factor", type=click.IntRange(1), help="For created target topics.")
@click.option("--allow-gaps", is_flag=True, help="Record retention losses instead of stopping.")
@duration_option(
    "--interval",
    "interval",
    default=None,
    minimum=0.5,
    help="How often to look for new topics, partitions and promote requests (default 30s).",
)
@renamed("--refresh-interval", "--interval", "interval")
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
@click.option(
    "--copy",
    type=click.Choice(copier.CHOICES),
    default=copier.AUTO,
    show_default=True,
    help="Copy record batches as bytes, or record by record (auto: bytes where possible).",
)
@max_unavailable_option("15m")
@click.option("--detach", is_flag=True, help="Run in the background; logs go to the link's folder.")
@json_option
@pass_app
def start(app: AppContext, /, **opts: Any) -> None:
    """Mirror SOURCE topics matching REGEX to TARGET until stopped (Ctrl-C or `mirror stop`).

    Safe to run again after any crash: it resumes exactly where the offset map ends.
    Both clusters are checked before the link is saved. While the source or target
    stops answering (a broker restart, a leader election) it waits, says so, and goes
    on by itself; an outage longer than --max-unavailable stops it (exit 3), resumable.
    """
    from kmigrate.mirror.control import check_clusters, check_link, link_dir, new_link, register
    from kmigrate.mirror.job import MirrorJob, MirrorOptions, choose_copier, tuning_from_env

    settings = app.settings
    require(opts["topics"], "--topics")  # (click >= 8.3 ignores topics_option's required)
    tuning = tuning_from_env()
    producer = _properties(opts["producer_props"])
    interval = _seconds(opts["interval"] or 30.0, "--refresh-interval")
    link = new_link(
        settings,
        source=opts["source"],
        target=opts["target"],
        topics=opts["topics"],
        name=opts["link_name"],
        start=check_position(opts["start"] or "earliest"),
        replication_factor=opts["replication_factor"],
    )
    store = app.workspace.store
    check_link(store, link)
    options = MirrorOptions(
        refresh_interval_s=interval,
        allow_gaps=opts["allow_gaps"],
        producer=producer,
        max_offsets_per_batch=opts["max_offsets_per_batch"],
        master=opts["master"],
        max_unavailable_s=opts["max_unavailable"],
        copy=opts["copy"],
        **tuning,
    )
    choose_copier(settings, link, options)  # --copy bytes where it cannot run: exit 2
    check_clusters(settings, link)
    register(store, link)
    folder = link_dir(settings, link.name)
    if opts["detach"]:
        _detach(app, link, _child_options(opts, interval), folder, opts["as_json"])
        return
    folder.mkdir(parents=True, exist_ok=True)
    job = MirrorJob(settings, store, link, options, folder, render.progress, _Ticker())
    render.progress(f"link {link.name}: {link.source} -> {link.target}, topics '{link.topics}'")
    job.run()
    render.progress(f"link {link.name}: stopped")
    if opts["as_json"]:
        render.print_json({"link": link.name, "state": "stopped"})


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


def _seconds(value: float | str, flag: str) -> float:
    """A DURATION; a string came from an old spelling (``flag``) click did not convert."""
    if not isinstance(value, str):
        return value
    try:
        return float(Duration(minimum=0.5).convert(value, None, None))
    except click.BadParameter as exc:
        raise click.BadParameter(exc.message, param_hint=f"'{flag}'") from None


def _properties(pairs: tuple[str, ...]) -> dict[str, str]:
    props = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--producer-property '{pair}' must be KEY=VALUE")
        props[key.strip()] = value.strip()
    return props


def _child_options(opts: dict[str, Any], interval: float) -> list[str]:
    """The foreground `mirror start` options a detached mirror runs with."""
    args = [f"--interval={interval:g}s", f"--max-unavailable={opts['max_unavailable']:g}s"]
    args.append(f"--copy={opts['copy']}")
    for flag in ("master", "replication_factor", "max_offsets_per_batch"):
        if opts[flag] is not None:
            args.append(f"--{flag.replace('_', '-')}={opts[flag]}")
    args += [f"--producer-property={pair}" for pair in opts["producer_props"]]
    return args + (["--allow-gaps"] if opts["allow_gaps"] else [])


def _detach(app: AppContext, link: Link, options: list[str], folder: Path, as_json: bool) -> None:
    from kmigrate.mirror.process import spawn_mirror

    settings = app.settings
    config = ["--config", str(settings.path)] if settings.path else []
    argv = [
        *config,
        "mirror",
        "start",
        f"--source={link.source}",
        f"--target={link.target}",
        f"--topics={link.topics}",
        f"--link={link.name}",
        f"--from={link.start}",
        *options,
    ]
    pid = spawn_mirror(app.workspace.store, link.name, argv, folder)
    log = folder / "mirror.log"
    if as_json:
        render.print_json({"link": link.name, "pid": pid, "log": str(log)})
    else:
        render.out.print(f"link {link.name}: mirror running as process {pid}; log {log}")


@group.command("status")
@link_option
@topics_option("Only these of the link's topics: a regex that must match the whole name.")
@click.option(
    "--partitions", "per_partition", is_flag=True, help="One row per partition, not per topic."
)
@limit_option(20, "topics (or partitions), those that need attention first")
@click.option("--offline", is_flag=True, help="Do not ask the clusters (store only).")
@json_option
@pass_app
def status(
    app: AppContext,
    link_name: str | None,
    topics: str | None,
    per_partition: bool,
    limit: int,
    offline: bool,
    as_json: bool,
) -> None:
    """Per link: its mirror's state, then per topic the lag, lagging partitions and rate
    (those with gaps, unreadable or largest lag first), and the totals.

    --json has every partition and topic (and a "summary"), whatever --limit says.
    """
    from kmigrate.cli.mirror_status import print_status
    from kmigrate.mirror.report import link_json

    pattern = compile_topics(topics) if topics is not None else None
    links = [app.workspace.link(link_name)] if link_name else app.workspace.links()
    results = [_status(app, link, offline, pattern) for link in links]
    if as_json:
        render.print_json({"links": [link_json(s) for s in results]})
        return
    if not results:
        render.out.print("no links yet; start one with `kmigrate mirror start`")
    for s in results:
        print_status(s, limit, per_partition)


def _status(
    app: AppContext, link: Link, offline: bool, topics: re.Pattern[str] | None
) -> LinkStatus:
    from kmigrate.mirror.status import link_status

    store = app.workspace.store
    if offline:
        return link_status(store, link, None, None, topics)
    with app.workspace.admins(link.source, link.target) as (source, target):
        return link_status(store, link, source, target, topics)


@group.command("stop")
@link_option
@timeout_option("2m", "How long to wait for the mirror to exit.")
@json_option
@pass_app
def stop(app: AppContext, link_name: str | None, timeout: float, as_json: bool) -> None:
    """Stop a link's mirror between two batches (it resumes exactly on the next start)."""
    from kmigrate.mirror.control import stop_mirror
    from kmigrate.mirror.status import state_of

    store = app.workspace.store
    name = link_name or _only_link(app)
    stopped = stop_mirror(store, name, timeout, render.progress)
    state, reason = ("stopped", None) if stopped else state_of(store, name)
    if as_json:
        render.print_json({"link": name, "stopped": stopped, "state": state, "reason": reason})
    elif stopped:
        render.out.print(f"link {name}: mirror stopped")
    else:
        render.out.print(
            f"link {name}: no mirror running ({state}{': ' + reason if reason else ''})"
        )


def _only_link(app: AppContext) -> str:
    links = app.workspace.links()
    if len(links) != 1:
        names = ", ".join(link.name for link in links) or "none"
        raise ConfigError(f"pass --link LINK (links: {names})")
    return links[0].name


@group.command("promote")
@click.option("--link", "link_name", required=True, metavar="LINK", help="Link name.")
@topics_option("Topics to promote: a regex that must match the whole name.", required=True)
@timeout_option("5m", "How long to wait for their lag to reach 0.")
@json_option
@pass_app
def promote_cmd(
    app: AppContext, link_name: str, topics: str, timeout: float, as_json: bool
) -> None:
    """Stop mirroring TOPICS once their lag is 0 and mark them writable on the target."""
    from kmigrate.mirror.control import promote

    require(topics, "--topics")  # (click >= 8.3 ignores topics_option's required)
    store = app.workspace.store
    done = promote(store, app.settings, link_name, topics, timeout, render.progress)
    if as_json:
        render.print_json({"link": link_name, "promoted": done})
    else:
        render.out.print(f"link {link_name}: promoted {', '.join(done)}")
