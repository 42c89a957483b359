"""`kmigrate topics list | describe`.

The inventory (and with it the Kafka client) is imported by the commands that ask for
it: `kmigrate topics --help` loads this module and should not load it.
"""

from __future__ import annotations

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.options import check_topic_name, cluster_option, json_option, topics_option
from kmigrate.jsonable import to_jsonable
from kmigrate.model.links import compile_topics


@click.group("topics")
def group() -> None:
    """Topics of a cluster."""


@group.command("list")
@cluster_option()
@topics_option("Only topics whose whole name this regex matches.")
@click.option("--internal", is_flag=True, help="Include internal topics (__consumer_offsets, ...).")
@json_option
@pass_app
def list_topics(
    app: AppContext, cluster_name: str, topics: str | None, internal: bool, as_json: bool
) -> None:
    """Topics with partition count, replication factor and record count."""
    from kmigrate.inventory.topics import topic_rows

    pattern = compile_topics(topics) if topics else None
    with app.workspace.admin(cluster_name) as admin:
        rows = topic_rows(admin, internal=internal, pattern=pattern)
    if as_json:
        render.print_json({"cluster": cluster_name, "topics": rows})
        return
    render.table(
        f"topics on {cluster_name}",
        ["topic", "partitions", "replication", "records", "under-replicated"],
        [
            (r.name, r.partitions, r.replication_factor, r.records, r.under_replicated or "")
            for r in rows
        ],
    )


@group.command("describe")
@click.argument("topic")
@cluster_option()
@json_option
@pass_app
def describe(app: AppContext, topic: str, cluster_name: str, as_json: bool) -> None:
    """Partitions (leader, replicas, ISR, offsets) and non-default configs of TOPIC."""
    from kmigrate.inventory.topics import topic_detail

    check_topic_name(topic)
    with app.workspace.admin(cluster_name) as admin:
        detail = topic_detail(admin, topic)
    info, marks = detail.info, detail.marks
    if as_json:
        data = to_jsonable(info)
        for p in data["partitions"]:
            w = marks[p["partition"]]
            p.update(low_watermark=w.low, high_watermark=w.high)
        render.print_json({"cluster": cluster_name, **data})
        return
    render.table(
        f"topic {topic} on {cluster_name}",
        ["partition", "leader", "replicas", "isr", "low", "high"],
        [
            (
                p.partition,
                p.leader,
                ",".join(map(str, p.replicas)),
                ",".join(map(str, p.isr)),
                marks[p.partition].low,
                marks[p.partition].high,
            )
            for p in info.partitions
        ],
    )
    if info.configs:
        render.table("non-default configs", ["config", "value"], sorted(info.configs.items()))
