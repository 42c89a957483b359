"""The reassignment planner at scale: a plan for 50 brokers and 100,000 replicas on
generated metadata (no Kafka), against the goal of 10 s on this 2-core machine.

    .venv/bin/python bench/reassign_scale.py [--no-before] [--before-commit REV]

Clusters that just added brokers: the old brokers hold every replica, racks kept apart,
some of them (every 7th) taking 1.6x the others' share; topics of 6 to 300 partitions
at replication factor 3, sizes log-normal (median ~66 MB). The goal adds the new brokers.

Cases: 50 brokers (10 new) in 5 racks with 33,334 partitions (100,002 replicas), and 12
brokers (2 new) in 3 racks with 5,000 partitions, which the planner before issue 33
(``--before-commit``, loaded from git) also plans in the same run, unless ``--no-before``
(it takes minutes). Reported per case: wall and CPU seconds, moves, replicas and bytes
moved, and the spread (max - min per broker) of replicas and preferred leaders before
and after. Writes ``bench/results/reassign-scale-<date>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from kmigrate.reassign import planner
from kmigrate.reassign.model import BrokerNode, ClusterModel, Partition, Spread

HERE = Path(__file__).resolve().parent
GOAL_S = 10.0
BEFORE = "9b4737e"  # the last commit with the planner that scanned every replica per move


def skewed_cluster(
    brokers: int, added: int, racks: int, partitions: int, seed: int = 33
) -> ClusterModel:
    """Brokers 1..n in racks r0..r{racks-1} round robin; the last ``added`` hold nothing.
    Each partition's 3 replicas go to 3 different racks, within a rack to an old broker
    weighted 1.6 when its id is a multiple of 7, else 1."""
    rng = random.Random(seed)
    nodes = tuple(BrokerNode(i, f"r{(i - 1) % racks}") for i in range(1, brokers + 1))
    by_rack: dict[str, list[int]] = {}
    for node in nodes[: brokers - added]:
        by_rack.setdefault(str(node.rack), []).append(node.node_id)
    weights = {r: [1.6 if b % 7 == 0 else 1.0 for b in ids] for r, ids in by_rack.items()}
    made: list[Partition] = []
    topic = 0
    while len(made) < partitions:
        count = min(rng.choice((6, 12, 24, 50, 100, 300)), partitions - len(made))
        for p in range(count):
            chosen = rng.sample(sorted(by_rack), 3)
            replicas = tuple(rng.choices(by_rack[r], weights[r])[0] for r in chosen)
            made.append(
                Partition(f"topic-{topic:04d}", p, replicas, int(rng.lognormvariate(18, 2)))
            )
        topic += 1
    return ClusterModel(nodes, tuple(made), "bench")


def spread(counts: Spread, brokers: tuple[int, ...]) -> dict[str, Any]:
    replicas = [counts.replicas.get(b, 0) for b in brokers]
    leaders = [counts.leaders.get(b, 0) for b in brokers]
    sizes = [counts.bytes.get(b, 0) for b in brokers]
    mean = sum(sizes) / len(sizes)
    return {
        "replicas": max(replicas) - min(replicas),
        "leaders": max(leaders) - min(leaders),
        # the broker furthest from the mean bytes, in % of the mean
        "bytes_off_mean_pct": round(100 * max(abs(s - mean) for s in sizes) / mean, 1),
    }


def measure(
    module: ModuleType, model: ClusterModel, added: tuple[int, ...], **goal: str
) -> dict[str, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    plan = module.plan_reassignment(model, module.Goal("add", brokers=added, **goal))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "moves": len(plan.moves),
        "replicas_moved": plan.replicas_moved,
        "gb_moved": round(plan.bytes_to_copy / 1e9, 1),
        "spread_before": spread(plan.before, plan.brokers),
        "spread_after": spread(plan.after, plan.brokers),
    }


def planner_at(commit: str) -> ModuleType:
    """The planner module as it was at ``commit`` (from git), importable beside today's."""
    source = subprocess.run(
        ["git", "-C", str(HERE), "show", f"{commit}:src/kmigrate/reassign/planner.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    name = "kmigrate.reassign._planner_before"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(source, f"{commit}:planner.py", "exec"), module.__dict__)
    return module


def case(brokers: int, added: int, racks: int, partitions: int) -> tuple[dict, ClusterModel]:
    model = skewed_cluster(brokers, added, racks, partitions)
    shape = {
        "brokers": brokers,
        "added": added,
        "racks": racks,
        "partitions": partitions,
        "replicas": sum(len(p.replicas) for p in model.partitions),
    }
    return shape, model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-before", action="store_true", help="skip the old planner")
    parser.add_argument("--before-commit", default=BEFORE)
    args = parser.parse_args()
    results: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "machine": {"cores": os.cpu_count(), "load_average_at_start": os.getloadavg()[0]},
        "goal_s": GOAL_S,
        "cases": [],
    }
    for brokers, added, racks, partitions in ((50, 10, 5, 33_334), (12, 2, 3, 5_000)):
        shape, model = case(brokers, added, racks, partitions)
        new = tuple(range(brokers - added + 1, brokers + 1))
        row = {
            **shape,
            "planner": measure(planner, model, new),
            "replicas_only": measure(planner, model, new, balance="replicas"),
        }
        if brokers == 12 and not args.no_before:
            row["before"] = {"commit": args.before_commit}
            row["before"] |= measure(planner_at(args.before_commit), model, new)
        results["cases"].append(row)
        print(json.dumps(row))
    big = results["cases"][0]["planner"]
    results["goal_met"] = big["seconds"] < GOAL_S
    out = HERE / "results" / f"reassign-scale-{results['date']}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"50 brokers, 100,002 replicas: {big['seconds']} s (goal {GOAL_S} s); wrote {out}")


if __name__ == "__main__":
    main()
