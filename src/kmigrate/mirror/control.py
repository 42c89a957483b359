"""Mirror use cases the CLI (and later the API) share: define a link, stop it, promote."""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path

from kmigrate.config import Settings
from kmigrate.errors import (
    ConfigError,
    ConflictError,
    MirrorError,
    MirrorRunningError,
    NotFoundError,
)
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.mirror.status import link_status, run_state
from kmigrate.model.links import (
    Link,
    StartPosition,
    TopicState,
    check_link_name,
    compile_topics,
    default_link_name,
)
from kmigrate.model.runs import LIVE_STATES
from kmigrate.store import Store
from kmigrate.store.links import get_link, link_topics_of, require_link, save_link, set_topic_state
from kmigrate.store.locks import pid_alive
from kmigrate.store.runs import get_run

Report = Callable[[str], None]

# How often a promote looks for the mirror's answer in the store: a promote through the
# gateway waits here while writes are held, so every poll interval is felt by producers.
PROMOTE_POLL_S = 0.02


def link_dir(settings: Settings, link: str) -> Path:
    """Where a link keeps its detached mirror's log."""
    base = settings.path.parent if settings.path else Path.cwd()
    return base / ".kmigrate" / "links" / link


def new_link(
    settings: Settings,
    *,
    source: str,
    target: str,
    topics: str,
    name: str | None,
    start: str,
    replication_factor: int | None,
) -> Link:
    """The link a user asks for, validated against the config; nothing is written."""
    settings.cluster(source)
    settings.cluster(target)
    if source == target:
        raise ConfigError("--source and --target name the same cluster; a mirror needs two")
    compile_topics(topics)
    return Link(
        check_link_name(name or default_link_name(source, target)),
        source,
        target,
        topics,
        StartPosition.parse(start),
        replication_factor,
    )


def check_link(store: Store, link: Link) -> None:
    """Refuse, reading only, what `save_link` would: a link of that name between other
    clusters, or one a live process mirrors."""
    stored = get_link(store, link.name)
    if stored is not None and (stored.source, stored.target) != (link.source, link.target):
        raise ConflictError(
            f"link '{link.name}' already mirrors {stored.source} -> {stored.target}; "
            f"choose another --link name for {link.source} -> {link.target}"
        )
    check_not_running(store, link.name)


def register(store: Store, link: Link) -> Link:
    """Save the link, once `check_link` and `check_clusters` passed (the stored one if a
    link of that name between the same clusters exists: its maps belong to it)."""
    return save_link(store, link)


def check_clusters(settings: Settings, link: Link) -> None:
    """Both clusters answer and accept kmigrate's credentials (ClusterError if not):
    asked before a link is saved, so a refused start leaves no link behind."""
    for name in (link.source, link.target):
        with ClusterAdmin(settings.cluster(name)) as admin:
            admin.cluster_metadata()


def check_not_running(store: Store, name: str) -> None:
    """Refuse when another live process mirrors the link (one writer per mirror topic)."""
    run = get_run(store, name)
    if run is None or run.pid == os.getpid():
        return
    state, _ = run_state(run)
    here = run.host == socket.gethostname()
    if state in LIVE_STATES and (not here or pid_alive(run.pid)):
        raise MirrorRunningError(
            f"link '{name}' is already mirrored by process {run.pid} on {run.host}; "
            f"stop it first: kmigrate mirror stop --link {name}"
        )


def stop_mirror(
    store: Store, name: str, timeout_s: float, report: Report, *, wait: bool = True
) -> bool:
    """Ask the link's mirror process to stop between two batches (and, with ``wait``,
    wait until it exited); False if none ran."""
    require_link(store, name)
    run = get_run(store, name)
    state, _ = run_state(run)
    if run is None or state not in LIVE_STATES:
        return False
    if run.host != socket.gethostname():
        raise MirrorError(
            f"link '{name}' is mirrored by process {run.pid} on host {run.host}; stop it there"
        )
    os.kill(run.pid, signal.SIGTERM)
    report(f"asked process {run.pid} to stop after its current batch")
    if not wait:
        return True
    deadline = time.monotonic() + timeout_s
    while pid_alive(run.pid):
        if time.monotonic() > deadline:
            raise MirrorError(
                f"process {run.pid} of link '{name}' did not stop within {timeout_s:g}s; "
                f"kill it (kill -9 {run.pid} is safe: the next start resumes exactly)"
            )
        time.sleep(0.2)
    return True


def promote(
    store: Store,
    settings: Settings,
    name: str,
    topics: str,
    timeout_s: float,
    report: Report,
) -> list[str]:
    """Stop mirroring the matching topics once fully mirrored; they become writable."""
    link = require_link(store, name)
    pattern = compile_topics(topics)
    matching = [t for t in link_topics_of(store, name) if pattern.fullmatch(t.topic)]
    chosen = [t for t in matching if t.state in (TopicState.MIRRORING, TopicState.PROMOTING)]
    if not chosen:
        done = [t.topic for t in matching if t.state is TopicState.PROMOTED]
        if done:  # promoted already (e.g. by a promote that was interrupted): nothing to do
            return done
        raise NotFoundError(f"no mirrored topic of link '{name}' matches --topics '{topics}'")
    state, _ = run_state(get_run(store, name))
    if state not in LIVE_STATES:
        return _promote_idle(store, settings, link, [t.topic for t in chosen])
    for t in chosen:
        set_topic_state(store, name, t.topic, TopicState.PROMOTING)
    report(f"waiting for the mirror to finish {len(chosen)} topic(s) (lag 0), then promote")
    deadline = time.monotonic() + timeout_s
    while True:
        states = {t.topic: t.state for t in link_topics_of(store, name)}
        if all(states[t.topic] is TopicState.PROMOTED for t in chosen):
            return [t.topic for t in chosen]
        if time.monotonic() > deadline:
            raise MirrorError(
                f"topics of link '{name}' were not fully mirrored within {timeout_s:g}s "
                "(producers still writing to the source?); the promote request stays: it "
                "completes as soon as their lag is 0"
            )
        time.sleep(PROMOTE_POLL_S)


def _promote_idle(store: Store, settings: Settings, link: Link, topics: list[str]) -> list[str]:
    with ClusterAdmin(settings.cluster(link.source)) as source:
        status = link_status(store, link, source, None)
    lagging = [p for p in status.partitions if p.topic in topics and (p.lag or 0) > 0]
    if lagging:
        first = lagging[0]
        raise ConflictError(
            f"{first.topic}[{first.partition}] is {first.lag} offset(s) behind the source and "
            f"no mirror runs for link '{link.name}'; start the mirror, then promote"
        )
    for topic in topics:
        set_topic_state(store, link.name, topic, TopicState.PROMOTED)
    return topics
