"""`kmigrate schemas`: a cluster's Schema Registry; copy it to another with the same ids,
and compare.

The registry's client and the settings model are imported by the commands that use them:
`kmigrate schemas --help` should not load them."""

from __future__ import annotations

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.differences import exit_if_differs, print_differences
from kmigrate.cli.options import cluster_option, json_option
from kmigrate.errors import ConflictError
from kmigrate.model.schemas import SchemaVersion
from kmigrate.schemas.plan import CopyPlan, RegistryView


def _pair(function: click.decorators.FC) -> click.decorators.FC:
    function = click.option(
        "--target", required=True, metavar="CLUSTER", help="The cluster whose registry gets it."
    )(function)
    return click.option(
        "--source", required=True, metavar="CLUSTER", help="The cluster whose registry is copied."
    )(function)


@click.group("schemas")
def group() -> None:
    """Schema Registry subjects, versions and ids: list, copy to another cluster's registry
    with the same ids, compare. Each cluster names its registry in clusters.yaml
    (schema_registry: {url: ...})."""


@group.command("list")
@cluster_option()
@json_option
@pass_app
def list_schemas(app: AppContext, cluster_name: str, as_json: bool) -> None:
    """Every subject version with its schema id, type and settings (soft-deleted ones
    marked)."""
    from kmigrate.schemas.between import read_registry

    view = read_registry(app.cluster(cluster_name))
    if as_json:
        render.print_json({"cluster": cluster_name} | _view_json(view))
        return
    if not view.versions:
        render.out.print(f"cluster {cluster_name}: the registry holds no schema")
        return
    render.table(
        None,
        ["subject", "version", "id", "type", "references", "compatibility", "mode", ""],
        [
            (
                v.subject,
                v.version,
                v.id,
                v.schema.schema_type,
                ", ".join(f"{r.subject} v{r.version}" for r in v.schema.references),
                view.compatibility.get(v.subject, ""),
                view.modes.get(v.subject, ""),
                "deleted" if v.deleted else "",
            )
            for v in view.versions
        ],
    )
    render.out.print(
        f"{len(view.versions)} version(s) of {len(view.subjects)} subject(s), "
        f"{len({v.id for v in view.versions})} schema id(s); global compatibility "
        f"{view.global_compatibility or 'not set'}"
    )


@group.command("copy")
@_pair
@click.option("--dry-run", is_flag=True, help="Show what would be written; change nothing.")
@json_option
@pass_app
def copy(app: AppContext, source: str, target: str, dry_run: bool, as_json: bool) -> None:
    """Register on the target every version the source has, under the same schema id and
    version number, references first; then subject compatibility and modes as on the
    source, and compare.

    The subjects written are in IMPORT mode while they are written, then get their mode
    as on the source. A target that holds another schema under one of the ids (or
    another id under one of the subject versions) is refused before anything is
    written. Versions the target already holds are left; so are subjects only the target
    has. Run it again after an interruption: it finishes what is left."""
    from kmigrate.schemas.between import carry_out, differences_between, planned

    pair = app.pair(source, target)
    copy = planned(*pair)
    plan = copy.plan
    if plan.conflicts:
        more = len(plan.conflicts) - 20
        raise ConflictError(
            f"the registry of '{target}' conflicts with the registry of '{source}' on "
            f"{len(plan.conflicts)} version(s); nothing was written",
            detail="\n".join(f"  {line}" for line in plan.conflicts[:20])
            + (f"\n  ... and {more} more" if more > 0 else ""),
        )
    left: list[str] = []
    if not dry_run:
        carry_out(pair[1], plan, (lambda _m: None) if as_json else render.progress)
        left = differences_between(copy.wanted, pair[1])
    answer = _plan_json(plan) | {"source": source, "target": target, "dry_run": dry_run}
    if as_json:
        render.print_json(answer | ({} if dry_run else {"differences": left}))
    else:
        _show_plan(plan, source, target, dry_run)
    if not as_json:
        print_differences(left, "differs: ")
    exit_if_differs(left)


@group.command("compare")
@_pair
@json_option
@pass_app
def compare(app: AppContext, source: str, target: str, as_json: bool) -> None:
    """Whether the target's registry holds every version of the source's under the same
    id and schema, with the same subject settings. Exit 0: it does; 1: it does not."""
    from kmigrate.schemas.between import compared

    found = compared(*app.pair(source, target))
    if as_json:
        render.print_json(
            {"source": source, "target": target, "differences": found, "equal": not found}
        )
    else:
        print_differences(found)
        render.out.print(
            f"schemas {source} -> {target}: "
            + (f"{len(found)} difference(s)" if found else "the target holds every version")
        )
    exit_if_differs(found)


def _show_plan(plan: CopyPlan, source: str, target: str, dry_run: bool) -> None:
    verb = "would register" if dry_run else "registered"
    render.out.print(
        f"schemas {source} -> {target}: {verb} {len(plan.register)} version(s), "
        f"{plan.present} already there"
    )
    rows: list[tuple[object, ...]] = [
        (v.subject, v.version, v.id, v.schema.schema_type, "deleted" if v.deleted else "")
        for v in plan.register
    ]
    if rows:
        render.table(None, ["subject", "version", "id", "type", ""], rows)
    settings = "would set" if dry_run else "set"
    for subject, level in plan.compatibility.items():
        name = "global compatibility" if subject is None else f"subject {subject} compatibility"
        render.out.print(f"{settings} {name} {level}")
    for subject, mode in plan.modes.items():
        if mode is not None:
            render.out.print(f"{settings} subject {subject} mode {mode}")
    for line in plan.not_copied:
        render.out.print(f"not copied: {line}")


def _version_json(v: SchemaVersion) -> dict[str, object]:
    return {
        "subject": v.subject,
        "version": v.version,
        "id": v.id,
        "schema_type": v.schema.schema_type,
        "references": [
            {"name": r.name, "subject": r.subject, "version": r.version}
            for r in v.schema.references
        ],
        "deleted": v.deleted,
    }


def _view_json(view: RegistryView) -> dict[str, object]:
    return {
        "versions": [_version_json(v) | {"schema": v.schema.text} for v in view.versions],
        "global_compatibility": view.global_compatibility,
        "compatibility": dict(view.compatibility),
        "modes": dict(view.modes),
    }


def _plan_json(plan: CopyPlan) -> dict[str, object]:
    return {
        "register": [_version_json(v) for v in plan.register],
        "already_there": plan.present,
        "compatibility": {s or "(global)": level for s, level in plan.compatibility.items()},
        "modes": plan.modes,
        "not_copied": plan.not_copied,
    }
