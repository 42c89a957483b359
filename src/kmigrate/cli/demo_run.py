"""What `kmigrate demo` runs and shows: the scenario on a live status screen (or step
lines with --json), then its accounting. Apart from cli/demo.py so that `kmigrate demo
--help` does not import the scenario."""

from __future__ import annotations

from pathlib import Path

from rich.live import Live

from kmigrate.cli import render
from kmigrate.cli.migration_view import status_view
from kmigrate.cli.verify import show_report
from kmigrate.demo.scenario import DemoResult, Screen, run_demo
from kmigrate.errors import KMigrateError
from kmigrate.migration.observe import Snapshot
from kmigrate.verify.report import VerifyReport


class LogScreen(Screen):
    """With --json: step lines on stderr; stdout keeps the one JSON result."""

    def step(self, text: str) -> None:
        render.progress(text)

    def progress(self, text: str) -> None:
        render.progress(f"  {text}")


class LiveScreen(Screen):
    """Step lines scroll above a status screen that refreshes in place."""

    def __init__(self) -> None:
        self.live = Live(console=render.out, auto_refresh=False, transient=False)

    def step(self, text: str) -> None:
        self.live.console.print(f"[bold cyan]>>[/bold cyan] {text}", soft_wrap=True)

    def progress(self, text: str) -> None:
        self.live.console.print(f"   [dim]{text}[/dim]", soft_wrap=True)

    def status(self, snap: Snapshot) -> None:
        self.live.update(status_view(snap), refresh=True)

    def verify(self, report: VerifyReport) -> None:
        show_report(report)


def run(where: Path, rate: float, via_gateway: bool, as_json: bool) -> None:
    """Run the demo in the sandbox at ``where``; not exact: an error (exit 1)."""
    if as_json:
        result = run_demo(where, LogScreen(), rate=rate, via_gateway=via_gateway)
        render.print_json(_as_json(result))
    else:
        screen = LiveScreen()
        with screen.live:
            result = run_demo(where, screen, rate=rate, via_gateway=via_gateway)
        render.out.print()
        _summary(result)
    failed = result.failed_sends > 0
    if failed or not result.exactly_once or (result.verify is not None and not result.verify.ok):
        raise KMigrateError("the demo's migration was not exact; see above")


def _as_json(r: DemoResult) -> dict[str, object]:
    return {
        "migration": r.migration,
        "topic": r.topic,
        "group": r.group,
        "plan": str(r.plan_path),
        "via_gateway": r.via_gateway,
        "produced": r.produced,
        "failed_sends": r.failed_sends,
        "consumed": r.consumed,
        "consumed_on": r.consumed_on,
        "consumed_twice": len(r.duplicates),
        "never_consumed": len(r.missing),
        "producer_pause_s": round(r.producer_pause_s, 3),
        "verified": r.verify is not None and r.verify.ok,
        "exactly_once": r.exactly_once,
        "seconds": round(r.seconds, 1),
        "config": str(r.settings.path) if r.settings.path else None,
    }


def _summary(r: DemoResult) -> None:
    if r.via_gateway:
        consumed = ("consumed through the gateway", f"{r.consumed_on.get('gateway', 0):,}")
        pause = ("longest acknowledgement wait during promote", f"{r.producer_pause_s:.2f}s")
    else:
        consumed = (
            "consumed on source / target",
            f"{r.consumed_on.get('source', 0):,} / {r.consumed_on.get('target', 0):,}",
        )
        pause = ("producer pause at promote", f"{r.producer_pause_s:.1f}s")
    render.table(
        "accounting",
        ("", "value"),
        [
            ("records produced (history + live)", f"{r.produced:,}"),
            ("failed sends", f"{r.failed_sends:,}"),
            ("records consumed by the group", f"{r.consumed:,}"),
            consumed,
            ("consumed twice", f"{len(r.duplicates):,}"),
            ("never consumed", f"{len(r.missing):,}"),
            pause,
            ("verify", "passed" if r.verify is not None and r.verify.ok else "FAILED"),
        ],
    )
    verdict = "exactly once" if r.exactly_once else "NOT exactly once"
    render.out.print(f"[bold]{verdict}[/bold]; demo finished in {r.seconds:.0f}s", soft_wrap=True)
    where = r.settings.path
    render.out.print(f"  plan:    {r.plan_path}", soft_wrap=True)
    render.out.print(
        f"  history: kmigrate --config {where} migrate history --migration {r.migration}",
        soft_wrap=True,
    )
    render.out.print(
        f"  stop:    kmigrate sandbox down --dir {where.parent if where else ''}", soft_wrap=True
    )
