"""`kmigrate quotas`: client quotas of a cluster; copy them to another and compare.

The quota code (the Kafka client, the principal map's model) is imported by the commands
that use it: `kmigrate quotas --help` should not load it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.differences import exit_if_differs, print_differences
from kmigrate.cli.options import cluster_option, json_option
from kmigrate.model.quotas import Entity, entity_text

if TYPE_CHECKING:
    from kmigrate.identity.principals import PrincipalMap
    from kmigrate.identity.quotas import QuotaPlan

pair_options = [
    click.option("--source", required=True, metavar="CLUSTER", help="The cluster copied from."),
    click.option("--target", required=True, metavar="CLUSTER", help="The cluster copied to."),
    click.option(
        "--principal-map",
        "map_path",
        type=click.Path(path_type=Path, dir_okay=False),
        help="YAML rules renaming principals on the way (User:alice -> User:alice@CORP).",
    ),
]


def _pair(function: click.decorators.FC) -> click.decorators.FC:
    for option in reversed(pair_options):
        function = option(function)
    return function


@click.group("quotas")
def group() -> None:
    """Client quotas (users, client ids, IPs): list, copy to another cluster, compare."""


@group.command("list")
@cluster_option()
@json_option
@pass_app
def list_quotas(app: AppContext, cluster_name: str, as_json: bool) -> None:
    """Every entity with a quota, and its values."""
    from kmigrate.identity.quota_copy import read_quotas

    found = read_quotas(app.settings.cluster(cluster_name))
    if as_json:
        render.print_json({"cluster": cluster_name, "quotas": _json(found)})
        return
    if not found:
        render.out.print(f"cluster {cluster_name}: no client quota set")
        return
    render.table(
        None,
        ["entity", "quotas"],
        [(entity_text(e), _values(v)) for e, v in sorted(found.items(), key=lambda i: str(i[0]))],
    )


@group.command("copy")
@_pair
@click.option("--dry-run", is_flag=True, help="Show what would be set; change nothing.")
@json_option
@pass_app
def copy(
    app: AppContext,
    source: str,
    target: str,
    map_path: Path | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Set on the target every quota the source has, then compare.

    A value the target already sets differently is overwritten; entities and values only
    the target has are left alone and listed (never deleted). With --principal-map, user
    quotas are copied under the names the map gives; a user it gives no name on the
    target is listed, not copied."""
    from kmigrate.identity.quota_copy import read_quotas, set_missing
    from kmigrate.identity.quotas import differences, plan_quotas, remapped

    principals = _map(map_path)
    pair = app.pair(source, target)
    wanted, lost = remapped(read_quotas(pair[0]), principals)
    plan = plan_quotas(wanted, read_quotas(pair[1])) if dry_run else set_missing(pair[1], wanted)
    left = [] if dry_run else differences(wanted, read_quotas(pair[1]))
    answer = _plan_json(plan) | {
        "source": source, "target": target, "dry_run": dry_run, "not_copied": lost
    }  # fmt: skip
    if as_json:
        render.print_json(answer | ({} if dry_run else {"differences": left}))
        return
    verb = "would set" if dry_run else "set"
    render.out.print(
        f"quotas {source} -> {target}: {verb} {len(plan.writes)} entit(ies), "
        f"{len(plan.same)} already equal, {len(plan.only_target)} only on the target (left)"
    )
    rows = [(entity_text(e), _values(v), verb) for e, v in plan.writes.items()]
    rows += [
        (entity_text(e), _values(v), "only on the target") for e, v in plan.only_target.items()
    ]
    if rows:
        render.table(None, ["entity", "quotas", ""], rows)
    for line in lost:
        render.out.print(f"not copied: {line}")
    print_differences(left, "differs: ")  # written, yet the target reads otherwise
    exit_if_differs(left)


@group.command("compare")
@_pair
@json_option
@pass_app
def compare(
    app: AppContext, source: str, target: str, map_path: Path | None, as_json: bool
) -> None:
    """Whether the target holds every quota of the source (values only the target sets
    are listed, not counted), user names as --principal-map gives them. Exit 0: it
    does; 1: it does not."""
    from kmigrate.identity.quota_copy import read_quotas
    from kmigrate.identity.quotas import differences, plan_quotas, remapped

    principals = _map(map_path)
    pair = app.pair(source, target)
    before, after = remapped(read_quotas(pair[0]), principals)[0], read_quotas(pair[1])
    found = differences(before, after)
    only = plan_quotas(before, after).only_target
    if as_json:
        render.print_json(
            {"source": source, "target": target, "differences": found,
             "only_on_target": _json(only), "equal": not found}
        )  # fmt: skip
    else:
        print_differences(found)
        render.out.print(
            f"quotas {source} -> {target}: "
            + (f"{len(found)} difference(s)" if found else "the target holds every quota")
            + (f"; {len(only)} entit(ies) with quotas only on the target" if only else "")
        )
    exit_if_differs(found)


def _map(path: Path | None) -> PrincipalMap:
    """The principal map, read and checked before any cluster is contacted."""
    from kmigrate.config import read_user_file
    from kmigrate.identity.principals import PrincipalMap, parse_map

    if path is None:
        return PrincipalMap()
    return parse_map(read_user_file(path, "--principal-map"), str(path))


def _values(values: dict[str, float]) -> str:
    from kmigrate.identity.quotas import number

    return ", ".join(f"{k}={number(v)}" for k, v in sorted(values.items()))


def _json(found: dict[Entity, dict[str, float]]) -> list[dict[str, object]]:
    return [
        {"entity": [{"type": kind, "name": name} for kind, name in entity], "values": values}
        for entity, values in found.items()
    ]


def _plan_json(plan: QuotaPlan) -> dict[str, object]:
    return {
        "set": _json(plan.writes),
        "already_equal": len(plan.same),
        "only_on_target": _json(plan.only_target),
    }
