"""`kmigrate verify`: prove a copy record by record. Exit 0 = match, 1 = differs; errors
exit as every command's do (2 usage, 3 cluster, 4 no such link, ...).

The verification (Spark, the Kafka clients, the store) is imported when it runs:
`kmigrate verify --help` should not load it.
"""

from __future__ import annotations

from pathlib import Path

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.differences import exit_if_differs
from kmigrate.cli.options import json_option, topics_option
from kmigrate.cli.position import check_position
from kmigrate.errors import ConfigError
from kmigrate.model.links import compile_topics
from kmigrate.verify.compare import RecordView
from kmigrate.verify.html import render_html
from kmigrate.verify.report import VerifyReport, record_json, report_json
from kmigrate.verify.schema_ids import UNKNOWN


@click.command("verify")
@click.option("--link", "link_name", metavar="LINK", help="Compare what this link mirrored.")
@topics_option("Only topics matching this whole-name regex (required without --link).")
@click.option("--source", metavar="CLUSTER", help="Without --link: the cluster copied from.")
@click.option("--target", metavar="CLUSTER", help="Without --link: the cluster copied to.")
@click.option(
    "--from",
    "start",
    metavar="POSITION",
    help="Without --link: where to align each partition on both sides: earliest (default), "
    "@EPOCH_MS, an ISO time, or OFFSETS.json.",
)
@click.option("--html", "html_path", type=click.Path(path_type=Path), help="Write an HTML report.")
@json_option
@pass_app
def command(
    app: AppContext,
    link_name: str | None,
    topics: str | None,
    source: str | None,
    target: str | None,
    start: str | None,
    html_path: Path | None,
    as_json: bool,
) -> None:
    """Compare source and target record by record on Spark (key, value, headers in order,
    timestamp and its type), or point at the first record that differs.

    With --link: the ranges the offset map says were mirrored and both clusters still
    hold. Without: --source A --target B --topics REGEX, aligned by position from --from.
    Exit 0: the copy matches; 1: it differs; other codes as for every command.
    """
    report = _run(app, link_name, topics, source, target, start, as_json)
    if html_path is not None:
        html_path.write_text(render_html(report))
    if as_json:
        render.print_json(report_json(report))
    else:
        show_report(report)
        if html_path is not None:
            render.progress(f"HTML report: {html_path}")
    exit_if_differs(not report.ok)


def _run(
    app: AppContext,
    link_name: str | None,
    topics: str | None,
    source: str | None,
    target: str | None,
    start: str | None,
    quiet: bool,
) -> VerifyReport:
    from kmigrate.verify.job import driver_offsets_from_env, read_start_file
    from kmigrate.verify.runs import verify_link, verify_position

    in_driver = driver_offsets_from_env()  # checked before any store or cluster is asked
    progress = (lambda _m: None) if quiet else render.progress
    settings = app.settings
    pattern = compile_topics(topics) if topics else None
    if link_name:
        if source or target or start:
            raise ConfigError("--source/--target/--from are for verifying without --link")
        link = app.workspace.link(link_name)
        return verify_link(settings, app.workspace.store, link, pattern, progress, in_driver)
    if not (source and target and pattern):
        raise ConfigError("pass --link LINK, or --source A --target B --topics REGEX")
    app.cluster(source), app.cluster(target)  # both configured, before a file is read
    position = check_position(start or "earliest", latest=False, files=True)
    timed = position == "earliest" or position.startswith("@")
    start_file = None if timed else read_start_file(position)
    return verify_position(
        settings, source, target, pattern, position, start_file, progress, in_driver
    )


def show_report(report: VerifyReport) -> None:
    rows = []
    for p in report.partitions:
        rows.append(
            (
                p.topic,
                p.partition,
                p.status,
                f"{p.source.span.start}..{p.source.span.end}" if p.source else "",
                f"{p.target.span.start}..{p.target.span.end}" if p.target else "",
                f"{p.source.digest.records:,}" if p.source else "",
                f"{p.target.digest.records:,}" if p.target else "",
                p.message,
            )
        )
    render.table(
        None,
        (
            "topic",
            "partition",
            "status",
            "source",
            "target",
            "src records",
            "tgt records",
            "detail",
        ),
        rows,
    )
    for p in report.partitions:
        for note in p.notes:
            render.out.print(f"{p.topic}[{p.partition}] {note.describe()}", markup=False)
        d = p.difference
        if d is not None:
            render.out.print(f"\n{p.topic}[{p.partition}]: {p.message}", markup=False)
            for side, rec in (("source", d.source_record), ("target", d.target_record)):
                render.out.print(f"  {side}: {_brief(rec)}", markup=False)
    _show_schemas(report)
    verdict = "match" if report.ok else "DIFFER"
    mb = report.bytes / 1e6
    render.out.print(
        f"\n{verdict}: {report.count('match')} of {len(report.partitions)} partition(s) "
        f"identical, {report.records:,} records, {mb:,.1f} MB compared in {report.seconds:.1f} s",
        markup=False,
    )


def _show_schemas(report: VerifyReport) -> None:
    check = report.schemas
    if not check.checked:
        render.out.print(f"\nschema ids: not checked ({check.reason})", markup=False)
        return
    for result in check.problems:
        render.out.print(f"\n{result.describe()}", markup=False)
    shown = sum(1 for r in check.ids if r.status != UNKNOWN)
    render.out.print(
        f"\nschema ids: {shown} carried by the records, "
        + (f"{len(check.problems)} not resolving alike" if check.problems else "all resolve alike")
        + " on both registries",
        markup=False,
    )


def _brief(rec: RecordView | None) -> str:
    data = record_json(rec)
    if data is None:
        return "(absent)"
    headers = ", ".join(f"{h['key']}={h['value']}" for h in data["headers"])
    return (
        f"offset {data['offset']} key={data['key']} value={data['value']} "
        f"headers=[{headers}] timestamp={data['timestamp']} ({data['timestamp_type']})"
    )
