"""`kmigrate groups list | describe | create` (and translate / migrate / sync).

The use cases are imported by the commands that run them: `kmigrate groups --help`
loads this module and should not load the Kafka clients.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click

from kmigrate.cli import group_moves, render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.group_moves import check_group_id
from kmigrate.cli.options import (
    check_topic_name,
    cluster_option,
    deprecated,
    groups_option,
    json_option,
    renamed,
    require,
    topics_option,
)
from kmigrate.cli.position import check_position
from kmigrate.jsonable import to_jsonable
from kmigrate.model.links import compile_topics


@click.group("groups")
def group() -> None:
    """Consumer groups of a cluster."""


@group.command("list")
@cluster_option()
@groups_option("Only groups whose id this regex matches (whole id).")
@json_option
@pass_app
def list_groups(app: AppContext, cluster_name: str, groups: str | None, as_json: bool) -> None:
    """Consumer groups with state, member count and total lag."""
    from kmigrate.inventory.groups import group_rows

    pattern = re.compile(groups) if groups else None
    with app.workspace.admin(cluster_name) as admin:
        rows = group_rows(admin, pattern)
    if as_json:
        render.print_json({"cluster": cluster_name, "groups": rows})
        return
    render.table(
        f"consumer groups on {cluster_name}",
        ["group", "state", "members", "partitions", "lag"],
        [(r.group, r.state, r.members, r.partitions, r.lag) for r in rows],
    )


@group.command("describe")
@click.argument("group_id", metavar="GROUP")
@cluster_option()
@json_option
@pass_app
def describe(app: AppContext, group_id: str, cluster_name: str, as_json: bool) -> None:
    """Members, committed offsets and lag of consumer group GROUP."""
    from kmigrate.inventory.groups import group_detail

    check_group_id(group_id)
    with app.workspace.admin(cluster_name) as admin:
        info = group_detail(admin, group_id)
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
@topics_option("Topics the group will consume: a regex that must match the whole name.")
@click.option("--topic", "old_topic", hidden=True, help="Old spelling of --topics (one name).")
@click.option(
    "--from",
    "position",
    metavar="POSITION",
    help="Start position: earliest, latest, @EPOCH_MS, an ISO time, or FILE.json mapping "
    'each partition of the one matching topic to an offset: {"0": 120, "1": 98}.',
)
@renamed("--at", "--from", "position")
@json_option
@pass_app
def create(app: AppContext, /, **opts: Any) -> None:
    """Create consumer group GROUP positioned at --from on every partition of the topics."""
    from kmigrate.groups.create import create_group, matching_topics, read_offsets_file

    cluster_name, group_id = opts["cluster_name"], check_group_id(opts["group_id"])
    pattern = _create_topics(opts["topics"], opts["old_topic"])
    position = check_position(require(opts["position"], "--from"), files=True)
    timed = position in ("earliest", "latest") or position.startswith("@")
    offsets_file = None if timed else read_offsets_file(Path(position))
    with app.workspace.admin(cluster_name) as admin:
        topics = matching_topics(admin, pattern, one=offsets_file is not None)
        offsets = create_group(admin, group_id, topics, position, offsets_file)
    if opts["as_json"]:
        render.print_json({"cluster": cluster_name, "group": group_id, "offsets": offsets})
        return
    render.table(
        f"group {group_id} created on {cluster_name}",
        ["topic", "partition", "offset"],
        [(o.topic, o.partition, o.offset) for o in offsets],
    )


def _create_topics(topics: str | None, old_topic: str | None) -> re.Pattern[str]:
    """The `groups create` topics: --topics REGEX, or the old --topic NAME (exactly it)."""
    if old_topic is not None:
        deprecated("--topic", "--topics")
        if topics is None:
            return re.compile(re.escape(check_topic_name(old_topic)))
    return compile_topics(require(topics, "--topics"))


group.add_command(group_moves.translate)
group.add_command(group_moves.migrate)
group.add_command(group_moves.sync)
