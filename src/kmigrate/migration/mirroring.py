"""The migration's mirror: which topics its link copies, and (re)starting it to match."""

from __future__ import annotations

from kmigrate.errors import ConfigError
from kmigrate.migration.session import Migration, Report
from kmigrate.mirror.control import link_dir, stop_mirror
from kmigrate.mirror.process import spawn_mirror
from kmigrate.mirror.status import run_state
from kmigrate.model.links import Link, StartPosition
from kmigrate.model.migrations import MIRROR_NEEDED, TopicPhase
from kmigrate.model.runs import LIVE_STATES
from kmigrate.store.links import get_link, save_link
from kmigrate.store.runs import get_run

# Seconds between the mirror's looks for promote requests: promote waits at most this.
REFRESH_S = 2.0
STOP_TIMEOUT_S = 120.0


def mirrored_topics(m: Migration, also: list[str] | None = None) -> list[str]:
    """Topics the link must cover: every started topic, plus ``also``."""
    started = [name for name, item in m.topics().items() if item.state != TopicPhase.PLANNED.value]
    return sorted(set(started) | set(also or []))


def needs_mirror(m: Migration) -> bool:
    return any(item.topic_phase in MIRROR_NEEDED for item in m.topics().values())


def mirror_running(m: Migration) -> bool:
    state, _ = run_state(get_run(m.store, m.name))
    return state in LIVE_STATES


def ensure_mirror(m: Migration, topics: list[str], report: Report) -> None:
    """Make the link cover exactly ``topics`` and its mirror run (restarting it if its
    topics changed); stop it when nothing is left to mirror."""
    plan = m.plan
    link = Link(
        m.name, plan.source, plan.target, plan.topics_regex(topics), StartPosition("earliest")
    )
    stored = get_link(m.store, m.name)
    running = mirror_running(m)
    if running and (stored is None or stored.topics != link.topics):
        report("restarting the mirror for the new set of topics")
        stop_mirror(m.store, m.name, STOP_TIMEOUT_S, report)
        running = False
    save_link(m.store, link)
    if running or not needs_mirror_for(m, topics):
        return
    config = m.settings.path
    if config is None:
        raise ConfigError("the mirror needs a clusters.yaml file; pass --config")
    argv = [
        "--config",
        str(config),
        "mirror",
        "start",
        "--source",
        plan.source,
        "--target",
        plan.target,
        "--topics",
        link.topics,
        "--link",
        m.name,
        "--refresh-interval",
        str(REFRESH_S),
    ]
    report(f"starting the mirror of {len(topics)} topic(s) (Spark)")
    pid = spawn_mirror(m.store, m.name, argv, link_dir(m.settings, m.name))
    report(f"mirror running as process {pid}; log {link_dir(m.settings, m.name) / 'mirror.log'}")


def needs_mirror_for(m: Migration, topics: list[str]) -> bool:
    items = m.topics()
    return any(
        t in items and (items[t].topic_phase in MIRROR_NEEDED or items[t].pending == "start")
        for t in topics
    )


def stop_if_running(m: Migration, report: Report) -> None:
    if mirror_running(m):
        stop_mirror(m.store, m.name, STOP_TIMEOUT_S, report)


def stop_if_idle(m: Migration, report: Report) -> None:
    """Ask the mirror to stop once no topic of the migration needs it any more; not
    waited for (promote must not keep producers waiting on Spark's shutdown)."""
    if not needs_mirror(m) and mirror_running(m):
        report("every topic is promoted: stopping the mirror")
        stop_mirror(m.store, m.name, STOP_TIMEOUT_S, report, wait=False)
