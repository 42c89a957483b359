"""`kmigrate clusters list | describe | check`.

The inventory and the preflight (and with them the Kafka client) are imported by the
commands that ask the clusters: `kmigrate clusters --help` loads this module and should
not load them.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.options import groups_option, json_option, topics_option
from kmigrate.errors import AuthorizationError, ClusterError, ConfigError
from kmigrate.jsonable import to_jsonable
from kmigrate.preflight.needs import ROLES, role_status

if TYPE_CHECKING:
    from kmigrate.preflight.check import ClusterReport
    from kmigrate.preflight.schema_registry import RegistryReport


@click.group("clusters")
def group() -> None:
    """Clusters from the configuration."""


@group.command("list")
@json_option
@pass_app
def list_clusters(app: AppContext, as_json: bool) -> None:
    """The configured clusters (secrets redacted); contacts no broker."""
    settings = app.settings
    rows: list[dict[str, Any]] = [
        {
            "name": c.name,
            "bootstrap_servers": c.bootstrap_servers,
            "properties": c.redacted_properties(),
        }
        for c in settings.clusters.values()
    ]
    if as_json:
        render.print_json({"config": str(settings.path), "clusters": rows})
        return
    render.table(
        f"clusters in {settings.path}",
        ["name", "bootstrap servers", "properties"],
        [
            (
                r["name"],
                r["bootstrap_servers"],
                ", ".join(f"{k}={v}" for k, v in r["properties"].items()),
            )
            for r in rows
        ],
    )


@group.command("describe")
@click.argument("name")
@json_option
@pass_app
def describe(app: AppContext, name: str, as_json: bool) -> None:
    """Brokers (with racks), controller and cluster id of cluster NAME."""
    from kmigrate.inventory.cluster import cluster_info

    with app.workspace.admin(name) as admin:
        info = cluster_info(admin)
    if as_json:
        render.print_json({"name": name, **to_jsonable(info)})
        return
    render.table(
        f"cluster {name} (id {info.cluster_id}, controller {info.controller_id})",
        ["broker", "host", "port", "rack", "role"],
        [
            (
                b.node_id,
                b.host,
                b.port,
                b.rack or "-",
                "controller" if b.node_id == info.controller_id else "",
            )
            for b in info.brokers
        ],
    )


@group.command("check")
@click.argument("names", nargs=-1, metavar="[CLUSTER]...")
@topics_option(help="Topics to check: a regex matching whole names (default: all visible).")
@groups_option(help="Groups to check: a regex matching whole ids (default: all visible).")
@json_option
@pass_app
def check(
    app: AppContext, names: tuple[str, ...], topics: str | None, groups: str | None, as_json: bool
) -> None:
    """The preflight: for each CLUSTER (default: every configured one), whether it
    answers, accepts kmigrate's credentials, its Kafka version and metadata mode, and
    whether kmigrate's principal has the permissions each role needs (mirror source,
    mirror target, group moves, reassign, gateway backend), as Kafka reports them; and
    whether the Schema Registry a cluster names answers (its mode and subjects).
    Only describes; changes nothing. Exit 3 names what is missing or unreachable."""
    from kmigrate.preflight.check import check_cluster
    from kmigrate.preflight.schema_registry import check_registry

    chosen = list(dict.fromkeys(names)) or list(app.settings.clusters)
    if not chosen:
        raise ConfigError(f"{app.settings.path}: no Kafka clusters under 'clusters:' to check")
    clusters = [app.cluster(name) for name in chosen]
    with ExitStack() as stack:
        # every client config is validated (exit 2) before any cluster is asked
        admins = [stack.enter_context(app.workspace.admin(c)) for c in clusters]
        with ThreadPoolExecutor(max_workers=min(len(admins), 8)) as pool:
            reports = list(pool.map(lambda a: check_cluster(a, topics, groups), admins))
            found = list(pool.map(check_registry, clusters))
    registries = [r for r in found if r is not None]
    if as_json:
        render.print_json(
            {
                "clusters": [
                    _report_json(r) | {"schema_registry": to_jsonable(g) if g else None}
                    for r, g in zip(reports, found, strict=True)
                ]
            }
        )
    else:
        _render(reports)
        _render_registries(registries)
    _verdict(reports, registries)


def _report_json(report: ClusterReport) -> dict[str, Any]:
    found = to_jsonable(report)
    found["findings"] = [
        {
            "role": f.need.role,
            "resource": f.need.resource,
            "operation": f.need.operation,
            "ok": f.ok,
            "detail": f.detail,
            "needed_to": f.need.why,
        }
        for f in report.findings
    ]
    found["roles"] = (
        None if report.failure else {role: role_status(report.findings, role) for role in ROLES}
    )
    found["ok"] = report.ok
    return dict(found)


def _render(reports: list[ClusterReport]) -> None:
    render.table(
        "clusters check",
        ["cluster", "status", "principal", "mode", "kafka", "brokers", "topics", "groups"],
        [
            (
                r.name,
                _status(r),
                r.principal,
                r.mode,
                r.version,
                r.brokers,
                r.topics_seen,
                r.groups_seen,
            )
            for r in reports
        ],
    )
    render.table(
        "permissions by role",
        ["cluster", *ROLES],
        [
            (r.name, *(("-" if r.failure else role_status(r.findings, role)) for role in ROLES))
            for r in reports
        ],
    )
    for r in reports:
        problems = [r.failure] if r.failure else [f.line for f in r.findings if f.ok is not True]
        for line in problems:
            click.echo(f"{r.name}: {line}")


def _render_registries(registries: list[RegistryReport]) -> None:
    if not registries:
        return
    render.table(
        "schema registries",
        ["cluster", "url", "status", "mode", "compatibility", "subjects"],
        [
            (
                g.cluster,
                g.url,
                "ok" if g.ok else "unreachable",
                g.mode,
                g.compatibility,
                "" if g.failure else g.subjects,
            )
            for g in registries
        ],
    )
    for g in registries:
        if g.failure:
            click.echo(f"{g.cluster}: {g.failure}")


def _status(report: ClusterReport) -> str:
    if report.failure:
        return "authentication failed" if report.authenticated is False else "unreachable"
    return f"missing {len(report.missing)}" if report.missing else "ok"


def _verdict(reports: list[ClusterReport], registries: list[RegistryReport]) -> None:
    """Exit 3 (one line) when a cluster or its registry could not be checked, or a
    cluster lacks a permission."""
    problems = [r.failure for r in reports if r.failure]
    problems += [g.failure for g in registries if g.failure]
    lacking = [f"cluster '{r.name}' as {r.principal}: {m.line}" for r in reports for m in r.missing]
    if not problems and not lacking:
        return
    first = (problems or lacking)[0]
    more = len(problems) + len(lacking) - 1
    message = first + (f"; and {more} more problem(s) (see the output)" if more else "")
    raise ClusterError(message) if problems else AuthorizationError(message)
