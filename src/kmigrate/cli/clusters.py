"""`kmigrate clusters list | describe`."""

from __future__ import annotations

from typing import Any

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.options import json_option
from kmigrate.jsonable import to_jsonable
from kmigrate.kafka.admin import ClusterAdmin


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
    cluster = app.cluster(name)
    with ClusterAdmin(cluster) as admin:
        info = admin.describe_cluster()
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
