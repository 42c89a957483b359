"""`groups migrate` and `groups sync` for hundreds of consumer groups.

    KMIGRATE_CACHE=$PWD/.cache .venv/bin/python bench/groups_scale.py [--groups 200 500]

Two one-broker sandbox clusters; one topic ``bench-gs`` of 4 partitions with 4,000
records, mirrored by ``kmigrate mirror start`` (link ``bench-gs``). For each size N in
``--groups``, N fresh consumer groups commit distinct positions on the source, and:

- ``per_group_s``: ``migrate_group`` called once per group in one process (the only way
  before issue 33; ``groups migrate --group G`` does exactly that, plus its start-up);
- ``bulk_s``: ``migrate_groups`` over all N in one process (what ``groups migrate
  --groups REGEX`` runs);
- ``cli_s``: ``kmigrate groups migrate --groups REGEX --yes`` as a command, start-up
  included;
- ``sync_round_s``: one ``groups sync`` round that commits all N groups.

Every group is then checked on the target against its exact translation through the
offset map. Results: bench/results/groups-scale-<date>.json.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import time
from collections.abc import Callable

from common import (
    WORK,
    Bench,
    kmigrate,
    results_header,
    run_kmigrate_mirror,
    sandbox,
    stop,
    write_results,
)
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.model.links import Link
from kmigrate.model.records import Record
from kmigrate.store import Store, store_for
from kmigrate.store.links import require_link
from kmigrate.store.offsets import load_partitions

TOPIC, LINK, PARTITIONS, RECORDS = "bench-gs", "bench-gs", 4, 4000


def load_source(bench: Bench, source: ClusterAdmin) -> None:
    source.create_topic(TOPIC, PARTITIONS)
    records = [
        Record(f"k{i}".encode(), f"v{i}".encode(), partition=i % PARTITIONS) for i in range(RECORDS)
    ]
    produce(bench.settings.cluster("source"), TOPIC, records)


def wait_mirrored(store: Store, source: ClusterAdmin, timeout: float = 600) -> float:
    """Seconds until the map covers every source record."""
    started = time.monotonic()
    ends = {w.partition: w.high for w in source.watermarks(TOPIC)}
    while time.monotonic() - started < timeout:
        try:
            states = {s.partition: s for s in load_partitions(store, LINK) if s.topic == TOPIC}
        except Exception:  # the link's first batch may not exist yet
            states = {}
        if len(states) == PARTITIONS and all(
            states[p].map.source_next >= end for p, end in ends.items()
        ):
            return time.monotonic() - started
        time.sleep(0.5)
    raise SystemExit(f"the mirror did not catch up within {timeout:.0f}s (see {WORK})")


def commit_on_source(bench: Bench, groups: list[str]) -> dict[str, dict[tuple[str, int], int]]:
    """Each group at its own position (raw client, all requests in flight)."""
    client = AdminClient(bench.settings.cluster("source").as_librdkafka())
    positions = {
        g: {(TOPIC, p): (i * 7 + p * 13) % (RECORDS // PARTITIONS) for p in range(PARTITIONS)}
        for i, g in enumerate(groups)
    }
    futures = {}
    for g, offsets in positions.items():
        tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        futures.update(client.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)]))
    for future in futures.values():
        future.result(60)
    return positions


def check_on_target(
    store: Store,
    target: ClusterAdmin,
    positions: dict[str, dict[tuple[str, int], int]],
) -> None:
    states = {(s.topic, s.partition): s for s in load_partitions(store, LINK)}
    wrong = []
    for group, offsets in positions.items():
        seen = {(o.topic, o.partition): o.committed for o in target.committed_offsets(group)}
        expected = {
            k: states[k].map.translate(o, states[k].target_start).target_offset
            for k, o in offsets.items()
        }
        if seen != expected:
            wrong.append(group)
    if wrong:
        raise SystemExit(f"{len(wrong)} group(s) not at their translation, e.g. {wrong[0]}")


def timed(step: Callable[[], object]) -> float:
    started = time.monotonic()
    step()
    return round(time.monotonic() - started, 2)


def per_group(
    store: Store, link: Link, source: ClusterAdmin, target: ClusterAdmin, groups: list[str]
) -> None:
    from kmigrate.groups.migrate import migrate_group

    for group in groups:
        migrate_group(store, link, group, source, target, apply=True)


def bulk(
    store: Store, link: Link, source: ClusterAdmin, target: ClusterAdmin, groups: list[str]
) -> None:
    from kmigrate.groups.migrate_many import migrate_groups

    outcome = migrate_groups(store, link, groups, source, target, apply=True)
    assert len(outcome.applied) == len(groups), outcome


def sync_round(
    store: Store, link: Link, source: ClusterAdmin, target: ClusterAdmin, prefix: str
) -> None:
    from kmigrate.groups.sync import sync_round as one_round

    done = one_round(store, link, re.compile(re.escape(prefix) + ".*"), source, target)
    assert sum(1 for g in done.groups if g.updated) > 0, done


def cli(bench: Bench, prefix: str) -> None:
    moved = subprocess.run(
        kmigrate(
            bench,
            "groups",
            "migrate",
            "--link",
            LINK,
            "--groups",
            re.escape(prefix) + ".*",
            "--yes",
            "--json",
        ),
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if moved.returncode != 0:
        raise SystemExit(f"groups migrate failed: {moved.stdout[-2000:]}{moved.stderr}")


def run_size(
    bench: Bench, store: Store, source: ClusterAdmin, target: ClusterAdmin, n: int, modes: list[str]
) -> dict:
    link = require_link(store, LINK)
    row: dict = {"groups": n}
    for mode in modes:
        prefix = f"bench-gs-{mode}-{n}-"
        groups = [f"{prefix}{i:04d}" for i in range(n)]
        positions = commit_on_source(bench, groups)
        steps: dict[str, tuple[str, Callable[[], object]]] = {
            "per_group": (
                "per_group_s",
                lambda g=groups: per_group(store, link, source, target, g),
            ),
            "bulk": ("bulk_s", lambda g=groups: bulk(store, link, source, target, g)),
            "cli": ("cli_s", lambda p=prefix: cli(bench, p)),
            "sync": ("sync_round_s", lambda p=prefix: sync_round(store, link, source, target, p)),
        }
        name, step = steps[mode]
        row[name] = timed(step)
        check_on_target(store, target, positions)
        print(f"{n} groups, {mode}: {row}", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, nargs="+", default=[200, 500])
    parser.add_argument(
        "--modes", nargs="+", default=["per_group", "bulk", "cli", "sync"],
        choices=["per_group", "bulk", "cli", "sync"],
    )  # fmt: skip
    parser.add_argument(
        "--per-group-max", type=int, default=500, help="Skip per_group above this many groups."
    )
    parser.add_argument("--label", default="after", help="Names this run in the results.")
    parser.add_argument("--keep", action="store_true", help="Leave the clusters running.")
    args = parser.parse_args()

    results: dict = {**results_header(PARTITIONS), "label": args.label, "sizes": []}
    with (
        sandbox(keep=args.keep) as bench,
        ClusterAdmin(bench.settings.cluster("source")) as source,
        ClusterAdmin(bench.settings.cluster("target")) as target,
    ):
        store = store_for(load_settings(bench.config))
        load_source(bench, source)
        mirror = run_kmigrate_mirror(bench, f"{TOPIC}.*", LINK)
        try:
            results["mirror_caught_up_s"] = round(wait_mirrored(store, source), 1)
            for n in args.groups:
                modes = [m for m in args.modes if m != "per_group" or n <= args.per_group_max]
                results["sizes"].append(run_size(bench, store, source, target, n, modes))
        finally:
            stop(mirror, group=False)
    out = write_results("groups-scale-", results)
    print(f"wrote {out} (logs in {WORK})")


if __name__ == "__main__":
    main()
