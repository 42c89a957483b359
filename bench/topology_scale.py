"""How long a mirror link takes to set up its target: `sync_topology` at 1,000 topics.

    KMIGRATE_CACHE=$PWD/.cache .venv/bin/python bench/topology_scale.py \
        [--topics 1000] [--partitions 10] [--label after] [--config clusters.yaml]

Two one-broker sandbox clusters in bench/.work/topology (or the clusters of
``--config``). The source gets ``--topics`` empty topics of ``--partitions`` partitions
(created in bulk, not timed); a new link in a fresh store then runs `sync_topology` once,
as `mirror start` does before Spark starts: it creates every target topic and begins
every partition's offset map. Reported: its wall time, and the round trips it made:
calls of each admin client method (CreateTopics, ListOffsets, DescribeConfigs, ...)
and store transactions. Both clusters' topics are deleted afterwards.

The same script measures an older kmigrate: run it with ``PYTHONPATH=<old checkout>/src``
and ``--label before``. Each run is added to bench/results/topology-scale-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from common import HERE, WORK, results_header
from confluent_kafka.admin import AdminClient, NewTopic

from kmigrate.config import ClusterConfig, load_settings
from kmigrate.errors import KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.mirror.topology import sync_topology
from kmigrate.model.links import Link, StartPosition
from kmigrate.sandbox import manager
from kmigrate.store import Store, open_store
from kmigrate.store.links import save_link

PREFIX = "bench-topo-"
SETUP_BATCH = 200  # topics per CreateTopics/DeleteTopics request of the setup


@contextmanager
def clusters(config: str | None) -> Iterator[tuple[ClusterConfig, ClusterConfig]]:
    """The given clusters, or a fresh sandbox stopped on exit."""
    if config:
        settings = load_settings(config)
        yield settings.cluster("source"), settings.cluster("target")
        return
    folder = WORK / "topology"
    manager.up(folder, manager.UpRequest())
    try:
        settings = load_settings(folder / "clusters.yaml")
        yield settings.cluster("source"), settings.cluster("target")
    finally:
        manager.down(folder, purge=True, grace=10)


def bulk(cluster: ClusterConfig, names: list[str], partitions: int | None) -> None:
    """Create (``partitions`` given) or delete ``names``, SETUP_BATCH per request, and
    wait until the cluster lists all of them (or none)."""
    client = AdminClient(cluster.as_librdkafka())
    for i in range(0, len(names), SETUP_BATCH):
        chunk = names[i : i + SETUP_BATCH]
        if partitions:
            futures = client.create_topics([NewTopic(n, partitions, 1) for n in chunk])
        else:
            futures = client.delete_topics(chunk)
        for future in futures.values():
            future.result(120)
    wanted = set(names) if partitions else set()
    deadline = time.monotonic() + 600
    while set(names) & set(client.list_topics(timeout=30).topics) != wanted:
        if time.monotonic() > deadline:
            raise SystemExit(f"topics not {'created' if partitions else 'deleted'} in 600 s")
        time.sleep(0.5)
    if partitions:  # the broker shows topics before it made their logs: wait for those
        with ClusterAdmin(cluster) as admin:
            every = [(n, p) for n in names for p in range(partitions)]
            while True:
                try:
                    admin.partition_offsets(every, "latest")
                    break
                except KMigrateError:
                    if time.monotonic() > deadline:
                        raise


@contextmanager
def counted(calls: Counter[str]) -> Iterator[None]:
    """Counts every admin client method call and store transaction meanwhile."""
    originals: dict[tuple[Any, str], Callable[..., Any]] = {}

    def wrap(owner: Any, name: str, key: str) -> None:
        original = getattr(owner, name)
        originals[(owner, name)] = original

        def counting(*args: Any, **kwargs: Any) -> Any:
            calls[key] += 1
            return original(*args, **kwargs)

        setattr(owner, name, counting)

    for name in (
        "create_topics",
        "create_partitions",
        "describe_topics",
        "describe_configs",
        "list_offsets",
        "list_topics",
    ):
        wrap(AdminClient, name, f"admin.{name}")
    wrap(Store, "transaction", "store.transaction")
    wrap(Store, "reading", "store.reading")
    try:
        yield
    finally:
        for (owner, name), original in originals.items():
            setattr(owner, name, original)


def measure(source: ClusterConfig, target: ClusterConfig, topics: int, partitions: int) -> dict:
    names = [f"{PREFIX}{i:05d}" for i in range(topics)]
    began = time.monotonic()
    bulk(source, names, partitions)
    setup_s = time.monotonic() - began
    calls: Counter[str] = Counter()
    try:
        with tempfile.TemporaryDirectory() as folder:
            store = open_store(f"sqlite:///{folder}/kmigrate.db")
            link = save_link(
                store,
                Link("bench-topo", "source", "target", f"{PREFIX}.*", StartPosition("earliest")),
            )
            with ClusterAdmin(source) as src, ClusterAdmin(target) as tgt, counted(calls):
                began = time.monotonic()
                assignment = sync_topology(store, link, src, tgt, lambda _line: None)
                sync_s = time.monotonic() - began
            assert len(assignment.pairs()) == topics * partitions, "not every partition assigned"
            store.close()
    finally:
        bulk(target, names, None)
        bulk(source, names, None)
    return {
        "topics": topics,
        "partitions_per_topic": partitions,
        "source_setup_s": round(setup_s, 2),
        "sync_topology_s": round(sync_s, 2),
        "calls": dict(sorted(calls.items())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--label", default="current")
    parser.add_argument("--config", help="clusters.yaml with clusters source and target")
    args = parser.parse_args()
    with clusters(args.config) as (source, target):
        run = {"label": args.label, **measure(source, target, args.topics, args.partitions)}
    print(json.dumps(run, indent=2))
    header = results_header(0)
    del header["partitions"]  # each run says its own
    out = HERE / "results" / f"topology-scale-{header['date']}.json"
    results = json.loads(out.read_text()) if out.exists() else {**header, "runs": []}
    results["runs"].append(run)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"results: {out}")


if __name__ == "__main__":
    main()
