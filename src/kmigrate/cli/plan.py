"""`kmigrate plan new | check`: write the migration plan, and check it against both clusters.

Both check every flag and file (clusters named, regexes, the plan, where it is written)
before contacting a cluster; `plan check` changes nothing. The planner and the check are
imported when they run: `kmigrate plan --help` should not load the Kafka clients or the
store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app, plan_output_options
from kmigrate.cli.options import duration_option, groups_option, json_option, topics_option
from kmigrate.cli.plan_output import writable
from kmigrate.errors import ConfigError, ConflictError
from kmigrate.jsonable import to_jsonable
from kmigrate.migration.waves import Bounds, parse_size, size_text, span_text
from kmigrate.model.links import check_link_name, default_link_name
from kmigrate.model.migrations import SwitchOrder

if TYPE_CHECKING:
    from kmigrate.migration.check import CheckReport
    from kmigrate.migration.plan import Plan


@click.group("plan")
def group() -> None:
    """Write a migration plan to review, and check it before anything runs."""


class Size(click.ParamType):  # type: ignore[type-arg]  # generic only in click >= 8.2
    """A number of bytes: 50GB, 512MB, 1.5TB or a plain number (units of 1024)."""

    name = "size"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> int:
        if isinstance(value, int):
            return value
        size = parse_size(str(value))
        if size is None:
            self.fail(f"'{value}' is not a size; write e.g. 50GB, 512MB or 1TB", param, ctx)
        return size


@group.command("new")
@click.option("--source", required=True, metavar="CLUSTER", help="Cluster to move from.")
@click.option("--target", required=True, metavar="CLUSTER", help="Cluster to move to.")
@topics_option(help="Topics: a regex that must match the whole name.", required=True)
@groups_option(help="Consumer groups to move: a regex that must match the whole id.")
@click.option(
    "--order",
    type=click.Choice([o.value for o in SwitchOrder]),
    default=SwitchOrder.CONSUMERS_FIRST.value,
    show_default=True,
    help="Which side switches to the target first.",
)
@click.option(
    "--name", metavar="MIGRATION", help="Migration (and link) name; default SOURCE-to-TARGET."
)
@plan_output_options
@click.option(
    "--via-gateway",
    is_flag=True,
    help="Clients use the kmigrate gateway (group home: the target): producers never stop; "
    "promote fences writes at the gateway.",
)
@click.option(
    "--wave-bytes",
    type=Size(),
    default="50GB",
    show_default=True,
    metavar="SIZE",
    help="Most bytes one wave moves (topics a group reads together are never split).",
)
@duration_option(
    "--wave-duration",
    "wave_duration",
    default="2h",
    help="Longest copy time one wave may take at the mirror's rate.",
)
@click.option(
    "--mirror-rate",
    type=click.FloatRange(1),
    help="Records/s the mirror copies (default: the link's measured rate, else assumed).",
)
@click.option(
    "--principal-map",
    "map_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="YAML rules renaming ACL principals for the target (User:alice -> User:alice@CORP).",
)
@json_option
@pass_app
def new(
    app: AppContext,
    source: str,
    target: str,
    topics: str,
    groups: str | None,
    order: str,
    name: str | None,
    output: Path,
    force: bool,
    via_gateway: bool,
    wave_bytes: int,
    wave_duration: float,
    mirror_rate: float | None,
    map_path: Path | None,
    as_json: bool,
) -> None:
    """Write an editable plan: topics with partitions and configs, groups with members and
    lag now, the switch order, the ACLs to copy, and (when it does not fit in one) the
    waves to move it in: topics a group reads together in one wave, each wave bounded by
    --wave-bytes and --wave-duration."""
    from kmigrate.config import read_user_file
    from kmigrate.identity.principals import parse_map
    from kmigrate.migration.planner import new_plan

    app.cluster(source), app.cluster(target)
    if source == target:
        raise ConfigError("--source and --target are the same cluster")
    if name is not None:
        check_link_name(name)
    writable(output, force)
    if via_gateway:
        if SwitchOrder(order) is not SwitchOrder.CONSUMERS_FIRST:
            raise ConfigError("--via-gateway migrations switch consumers first; drop --order")
        home = app.settings.gateway.group_home if app.settings.gateway else None
        if home != target:
            raise ConfigError(
                f"--via-gateway needs clusters.yaml 'gateway:' with group_home: {target} "
                f"(it is {home or 'not configured'})"
            )
    principals = (
        parse_map(read_user_file(map_path, "--principal-map"), str(map_path)) if map_path else None
    )
    rate, rate_from = mirror_rate_for(app, name or default_link_name(source, target), mirror_rate)
    with app.workspace.admin(source) as admin:
        plan = new_plan(
            admin,
            target=target,
            topics=topics,
            groups=groups,
            order=SwitchOrder(order),
            name=name,
            bounds=Bounds(wave_bytes, wave_duration, rate),
            rate_from=rate_from,
            principals=principals,
            target_cluster=app.cluster(target),
        )
    plan = plan.model_copy(update={"via_gateway": via_gateway})
    output.write_text(plan.to_yaml(str(output)))
    if as_json:
        render.print_json(
            {
                "plan": str(output),
                "migration": plan.name,
                "topics": len(plan.topics),
                "groups": len(plan.groups),
                "acls": len(plan.acls),
                "quotas": len(plan.quotas),
                "schema_versions": plan.schemas.versions if plan.schemas else None,
                "waves": [w.model_dump(mode="json") for w in plan.waves],
            }
        )
        return
    show_waves(plan)
    waves = f", {len(plan.waves)} waves" if plan.waves else ""
    schemas = f", {plan.schemas.versions} schema version(s)" if plan.schemas else ""
    render.out.print(
        f"wrote {output}: {len(plan.topics)} topic(s), {len(plan.groups)} group(s), "
        f"{len(plan.acls)} ACL(s), {len(plan.quotas)} quota entit(ies){schemas} to copy{waves}; "
        f"review it, then: kmigrate plan check {output}",
        soft_wrap=True,
    )


def mirror_rate_for(app: AppContext, link: str, given: float | None) -> tuple[float, str]:
    """The mirror's rate for plan estimates: given, the link's measured, or assumed
    (reading the store creates nothing)."""
    from kmigrate.migration.check import mirror_rate

    return mirror_rate(app.workspace.store, link, given)


def show_waves(plan: Plan) -> None:
    """The plan's waves as a table, with how they were sized."""
    sizing = plan.wave_sizing
    if not plan.waves or sizing is None:
        return
    render.table(
        None,
        ("wave", "topics", "groups", "bytes", "records", "copy time"),
        [
            (
                str(w.number),
                str(len(w.topics)),
                str(len(w.groups)),
                size_text(w.bytes),
                f"{w.records:,}",
                f"~{span_text(w.copy_s)}",
            )
            for w in plan.waves
        ],
    )
    render.out.print(
        f"waves of at most {size_text(sizing.max_bytes)} and {span_text(sizing.max_copy_s)} "
        f"at {sizing.mirror_rate:,.0f} records/s ({sizing.rate_from}); bytes from "
        f"{sizing.bytes_from}",
        soft_wrap=True,
    )
    for w in plan.waves:
        if w.over_bounds:
            render.out.print(f"[yellow]wave {w.number}[/yellow]: {w.over_bounds}", soft_wrap=True)


@group.command("check")
@click.argument("plan_file", type=click.Path(path_type=Path))
@click.option(
    "--sample",
    type=click.FloatRange(0.5),
    default=3.0,
    show_default=True,
    help="Seconds to sample the producers' rate on the source.",
)
@click.option("--mirror-rate", type=click.FloatRange(1), help="Records/s the mirror copies.")
@json_option
@pass_app
def check(
    app: AppContext, plan_file: Path, sample: float, mirror_rate: float | None, as_json: bool
) -> None:
    """List every problem the plan would hit, before anything runs (exit 5 if any)."""
    from kmigrate.migration.check import check_plan
    from kmigrate.migration.plan import load_plan

    plan = load_plan(plan_file)
    app.cluster(plan.source), app.cluster(plan.target)
    store = app.workspace.store
    with app.workspace.admins(plan.source, plan.target) as (s, t):
        report = check_plan(plan, store, s, t, sample_s=sample, mirror_rate=mirror_rate)
    if as_json:
        render.print_json(to_jsonable(report) | {"ok": report.ok})
    else:
        show_check(report)
    if not report.ok:
        raise ConflictError(f"{plan_file}: {len(report.problems)} problem(s); fix them first")


def show_check(report: CheckReport) -> None:
    render.table(
        None,
        ("topic", "records to copy", "producers now", "source retention left"),
        [
            (
                e.topic,
                f"{e.backlog:,}",
                f"{e.incoming_per_s:,.0f}/s",
                "no limit" if e.retention_left_s is None else f"{e.retention_left_s:,.0f}s",
            )
            for e in report.estimates
        ],
    )
    if report.waves:
        render.table(
            None,
            ("wave", "topics", "groups", "records to copy", "producers now", "copy", "catch-up"),
            [
                (
                    str(w.wave),
                    str(w.topics),
                    str(w.groups),
                    f"{w.backlog:,}",
                    f"{w.incoming_per_s:,.0f}/s",
                    f"~{span_text(w.copy_s)}",
                    "never" if w.catch_up_s is None else f"~{span_text(w.catch_up_s)}",
                )
                for w in report.waves
            ],
        )
        render.out.print(
            "copy: a wave's records at the mirror's rate; catch-up: until in sync while "
            "producers write, the waves before it still mirrored",
            soft_wrap=True,
        )
    catch_up = "never" if report.catch_up_s is None else f"~{report.catch_up_s:,.0f}s"
    render.out.print(
        f"mirror rate {report.mirror_rate:,.0f} records/s ({report.rate_source}); "
        f"catch-up {catch_up}"
    )
    for problem in report.problems:
        render.out.print(f"[red]problem[/red] {problem}", soft_wrap=True)
    if report.ok:
        render.out.print("[green]no problems[/green]")
