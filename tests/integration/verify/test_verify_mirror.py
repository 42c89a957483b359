"""verify on copies made for real: by kmigrate's mirror (with a link), and by another
tool (no link, aligned by position)."""

from __future__ import annotations

import json
from pathlib import Path

from harness.helpers import run_cli, unique
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.model.records import Record
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import (
    MirrorProcess,
    mirror_config,
    mirror_until_caught_up,
    transactional,
)
from tests.integration.verify.conftest import source_records


def test_mirrored_copy_passes_and_a_deleted_target_prefix_is_retention(
    clusters: Clusters, tmp_path: Path
) -> None:
    plain, txn = unique("vmp"), unique("vmt")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(plain, 2)
        admin.create_topic(txn, 2)
    produce(clusters.source, plain, source_records(plain, 1200, 0) + source_records(plain, 900, 1))
    transactional(clusters.source, txn, rounds=8)  # aborted transactions and markers
    config = mirror_config(clusters.config_path, tmp_path)
    mirror = MirrorProcess(
        config,
        "verified",
        ("--source", "source", "--target", "target", "--topics", f"{plain}|{txn}"),
        tmp_path / "mirror.log",
    )
    mirror_until_caught_up(mirror, clusters.source, [plain, txn])

    done = run_cli("verify", "--link", "verified", "--json", config=str(config), timeout=280)
    assert done.code == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] and report["summary"]["matched"] == 4
    counts = {(p["topic"], p["partition"]): p["target"]["records"] for p in report["partitions"]}
    assert counts[(plain, 0)] == 1200 and counts[(plain, 1)] == 900
    assert counts[(txn, 0)] + counts[(txn, 1)] == 40  # the 4 committed rounds of 10
    # 2,196 source offsets (markers too): in this process by default, on Spark past a limit
    for limit, where in (("", "in this process"), ("100", "on Spark (local[2])")):
        again = run_cli("verify", "--link", "verified", config=str(config), timeout=280,
                        env={"KMIGRATE_VERIFY_DRIVER_OFFSETS": limit})  # fmt: skip
        assert again.code == 0, again.stdout + again.stderr
        assert f"up to 2,196 source offsets and their target counterparts, {where}" in (
            again.stderr
        ), again.stderr

    with ClusterAdmin(clusters.target) as admin:
        admin.delete_records(plain, {0: 500})
    done = run_cli(
        "verify",
        "--link",
        "verified",
        "--topics",
        plain,
        "--json",
        config=str(config),
        timeout=280,
    )
    assert done.code == 0, done.stdout + done.stderr
    p0 = next(p for p in json.loads(done.stdout)["partitions"] if p["partition"] == 0)
    assert p0["status"] == "match"
    assert {"kind": "retention", "side": "target", "start": 0, "end": 500} in p0["not_compared"]
    assert (p0["source"]["start"], p0["target"]["start"], p0["target"]["records"]) == (
        500,
        500,
        700,
    )


def test_copy_made_by_another_tool_is_compared_by_position(clusters: Clusters) -> None:
    topic = unique("vext")
    with ClusterAdmin(clusters.source) as src, ClusterAdmin(clusters.target) as tgt:
        src.create_topic(topic, 2)
        tgt.create_topic(topic, 2)
        records = source_records(topic, 600, 0) + source_records(topic, 600, 1)
        produce(clusters.source, topic, records)
        # Retention took the first 100 records of partition 0 before the copy was made.
        src.delete_records(topic, {0: 100})
    copy = [r for r in records if not (r.partition == 0 and int(r.key[1:]) < 100)]  # type: ignore[index]
    changed = next(i for i, r in enumerate(copy) if r.partition == 1 and r.key == b"k300")
    old = copy[changed]
    copy[changed] = Record(old.key, b"changed by the other tool", old.headers, old.timestamp, 1)
    produce(clusters.target, topic, copy)

    done = run_cli(
        "verify",
        "--source",
        "source",
        "--target",
        "target",
        "--topics",
        topic,
        "--from",
        "earliest",
        "--json",
        config=str(clusters.config_path),
        timeout=280,
    )
    assert done.code == 1, done.stdout + done.stderr
    parts = {p["partition"]: p for p in json.loads(done.stdout)["partitions"]}
    assert parts[0]["status"] == "match"
    assert (parts[0]["source"]["start"], parts[0]["target"]["start"]) == (100, 0)
    d = parts[1]["difference"]
    assert (d["kind"], d["source_offset"], d["target_offset"], d["fields"]) == (
        "changed",
        300,
        300,
        ["value"],
    )


def test_errors_exit_with_the_table_code_and_one_line(clusters: Clusters) -> None:
    done = run_cli("verify", "--link", "no-such-link", config=str(clusters.config_path))
    assert done.code == 4  # a named link that does not exist
    assert done.stderr.count("\n") == 1 and "no-such-link" in done.stderr, done.stderr
    done = run_cli(
        "verify", "--source", "source", "--target", "target", config=str(clusters.config_path)
    )
    assert done.code == 2 and "--topics" in done.stderr
