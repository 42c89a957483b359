"""`kmigrate groups list | describe | create` (and translate / migrate / sync)."""

from __future__ import annotations

import click

from kmigrate.cli import group_moves, render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.options import cluster_option, json_option
from kmigrate.groups.create import create_group
from kmigrate.jsonable import to_jsonable
from kmigrate.kafka.admin import ClusterAdmin


@click.group("groups")
def group() -> None:
    """Consumer groups of a cluster."""


@group.command("list")
@cluster_option()
@json_option
@pass_app
def list_groups(app: AppContext, cluster_name: str, as_json: bool) -> None:
    """Consumer groups with state, member count and total lag."""
    with ClusterAdmin(app.cluster(cluster_name)) as admin:
        described = [admin.describe_group(g.group_id) for g in admin.list_groups()]
    rows = [
        {
            "group": g.group_id,
            "state": g.state,
            "members": len(g.members),
            "partitions": len(g.offsets),
            "lag": g.total_lag,
        }
        for g in described
    ]
    if as_json:
        render.print_json({"cluster": cluster_name, "groups": rows})
        return
    render.table(
        f"consumer groups on {cluster_name}",
        ["group", "state", "members", "partitions", "lag"],
        [(r["group"], r["state"], r["members"], r["partitions"], r["lag"]) for r in rows],
    )


@group.command("describe")
@click.argument("group_id", metavar="GROUP")
@cluster_option()
@json_option
@pass_app
def describe(app: AppContext, group_id: str, cluster_name: str, as_json: bool) -> None:
    """Members, committed offsets and lag of consumer group GROUP."""
    with ClusterAdmin(app.cluster(cluster_name)) as admin:
        info = admin.describe_group(group_id)
    if as_json:
        render.print_json({"cluster": cluster_name, **to_jsonable(info)})
        return
    render.table(
        f"group {group_id} on {cluster_name}: {info.state}, {len(info.members)} member(s)",
        ["topic", "partition", "committed", "log end", "lag"],
        [(o.topic, o.partition, o.committed, o.log_end, o.lag) for o in info.offsets],
    )


@group.command("create")
@cluster_option()
@click.option("--group", "group_id", required=True, metavar="GROUP", help="Group id to create.")
@click.option("--topic", required=True, metavar="TOPIC", help="Topic the group will consume.")
@click.option(
    "--at",
    required=True,
    metavar="earliest|latest|@EPOCH_MS|FILE.json",
    help='Start position; FILE.json maps each partition to an offset: {"0": 120, "1": 98}.',
)
@json_option
@pass_app
def create(
    app: AppContext, cluster_name: str, group_id: str, topic: str, at: str, as_json: bool
) -> None:
    """Create consumer group GROUP positioned at --at on every partition of TOPIC."""
    with ClusterAdmin(app.cluster(cluster_name)) as admin:
        offsets = create_group(admin, group_id, topic, at)
    if as_json:
        render.print_json({"cluster": cluster_name, "group": group_id, "offsets": offsets})
        return
    render.table(
        f"group {group_id} created on {cluster_name}",
        ["topic", "partition", "offset"],
        [(o.topic, o.partition, o.offset) for o in offsets],
    )


group.add_command(group_moves.translate)
group.add_command(group_moves.migrate)
group.add_command(group_moves.sync)
