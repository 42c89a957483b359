"""A self-contained HTML report of a verification: one file, inline CSS, no scripts,
no server; it opens in any browser and can be attached to a change ticket."""

from __future__ import annotations

import datetime as dt
from html import escape
from typing import Any

from kmigrate.verify.report import VerifyReport, report_json

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem; color: #1d1d1f; }
h1 { font-size: 1.4rem; margin-bottom: .2rem; }
.verdict { font-size: 1.1rem; font-weight: 600; padding: .4rem .8rem; border-radius: 4px;
  display: inline-block; margin: .6rem 0 1rem; }
.ok { background: #e3f6e8; color: #12632c; } .bad { background: #fde4e4; color: #8c1616; }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; }
th, td { border: 1px solid #d0d0d5; padding: .25rem .6rem; text-align: left; vertical-align: top; }
th { background: #f3f3f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.mismatch td, tr.changed-during-check td { background: #fff4f4; }
code, .rec { font-family: ui-monospace, monospace; font-size: 12px; white-space: pre-wrap;
  word-break: break-all; }
.note { color: #555; }
"""


def _cell(value: Any, *, num: bool = False) -> str:
    text = "" if value is None else (f"{value:,}" if num and isinstance(value, int) else str(value))
    return f'<td class="num">{escape(text)}</td>' if num else f"<td>{escape(text)}</td>"


def _record(rec: dict[str, Any] | None) -> str:
    if rec is None:
        return "<em>absent</em>"
    headers = ", ".join(f"{h['key']}={h['value']}" for h in rec["headers"]) or "(none)"
    lines = [
        f"offset     {rec['offset']}",
        f"key        {rec['key']}  ({rec['key_bytes']} bytes)",
        f"value      {rec['value']}  ({rec['value_bytes']} bytes)",
        f"headers    {headers}",
        f"timestamp  {rec['timestamp']} ({rec['timestamp_type']})",
    ]
    return f'<div class="rec">{escape(chr(10).join(lines))}</div>'


def render_html(report: VerifyReport) -> str:
    data = report_json(report)
    s = data["summary"]
    when = dt.datetime.fromtimestamp(report.started_ms / 1000, dt.UTC).strftime(
        "%Y-%m-%d %H:%M:%S UTC"
    )
    scope = f"link {report.link}" if report.link else "by position (no link)"
    verdict = (
        '<div class="verdict ok" id="verdict">Source and target match</div>'
        if report.ok
        else '<div class="verdict bad" id="verdict">Source and target differ</div>'
    )
    rows = []
    for p in data["partitions"]:
        src, tgt = p["source"] or {}, p["target"] or {}
        rows.append(
            f'<tr class="{escape(p["status"])}">'
            + _cell(p["topic"])
            + _cell(p["partition"], num=True)
            + _cell(p["status"])
            + _cell(f"{src['start']}..{src['end']}" if src else None)
            + _cell(f"{tgt['start']}..{tgt['end']}" if tgt else None)
            + _cell(src.get("records"), num=True)
            + _cell(tgt.get("records"), num=True)
            + _cell(p["mapped_records"], num=True)
            + _cell(p["message"])
            + "</tr>"
        )
    details = []
    for p, result in zip(data["partitions"], report.partitions, strict=True):
        if p["difference"] is not None:
            d = p["difference"]
            details.append(
                f'<h3 class="difference">{escape(p["topic"])}[{p["partition"]}]: '
                f"{escape(d['kind'])}</h3><p>{escape(p['message'])}</p>"
                "<table><tr><th>source</th><th>target</th></tr><tr>"
                f"<td>{_record(d['source_record'])}</td><td>{_record(d['target_record'])}</td>"
                "</tr></table>"
            )
        for note in result.notes:
            details.append(
                f'<p class="note">{escape(p["topic"])}[{p["partition"]}] '
                f"{escape(note.describe())}</p>"
            )
    schemas = report.schemas
    schema_lines = (
        [f'<p class="schema-id">{escape(r.describe())}</p>' for r in schemas.problems]
        if schemas.checked
        else [f"<p>Not checked: {escape(schemas.reason)}.</p>"]
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>kmigrate verify: {escape(report.source_cluster)} → {escape(report.target_cluster)}</title>
<style>{_CSS}</style></head>
<body>
<h1>kmigrate verify: {escape(report.source_cluster)} → {escape(report.target_cluster)}</h1>
<div>{escape(scope)} · started {escape(when)} · {report.seconds:.1f} s</div>
{verdict}
<table id="summary"><tr><th>partitions</th><th>matched</th><th>mismatched</th>
<th>nothing to compare</th><th>changed during check</th><th>records</th><th>bytes</th></tr><tr>
{_cell(s["partitions"], num=True)}{_cell(s["matched"], num=True)}{_cell(s["mismatched"], num=True)}
{_cell(s["nothing_to_compare"], num=True)}{_cell(s["changed_during_check"], num=True)}
{_cell(s["records"], num=True)}{_cell(s["bytes"], num=True)}</tr></table>
<h2>Partitions</h2>
<table id="partitions"><tr><th>topic</th><th>partition</th><th>status</th>
<th>source range</th><th>target range</th><th>source records</th><th>target records</th>
<th>mapped</th><th>detail</th></tr>
{"".join(rows)}
</table>
<h2>Differences and ranges not compared</h2>
{"".join(details) or "<p>None.</p>"}
<h2 id="schemas">Schema ids</h2>
{"".join(schema_lines) or "<p>Every schema id the records carry resolves alike.</p>"}
</body></html>
"""
