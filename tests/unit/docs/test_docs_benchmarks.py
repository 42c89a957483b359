"""The benchmark page's tables come from bench/results/*.json (tools/docs/benchmarks.py)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "benchmarks.md"
RESULTS = ROOT / "bench" / "results"


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "docs_benchmarks", ROOT / "tools/docs/benchmarks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as mkdocs loads hooks: dataclasses look their module up
    spec.loader.exec_module(module)
    return module


hook = _hook()


def test_every_results_kind_has_a_table_on_the_page_and_every_table_has_results() -> None:
    on_page = set(hook.PLACEHOLDER.findall(PAGE.read_text()))
    kinds = set(hook.load_results(RESULTS))
    assert kinds - on_page == set(), "results files whose kind the page does not show"
    assert on_page - kinds == set(), "tables on the page with no results file"
    assert on_page <= set(hook.RENDERERS)


def test_the_page_is_filled_with_dates_machines_and_commands(
    caplog: pytest.LogCaptureFixture,
) -> None:
    page = hook.fill(PAGE.read_text(), RESULTS)
    assert "<!-- bench:" not in page
    assert "no results file" not in page and "unknown benchmark table" not in page
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    captions = re.findall(
        r"^\*Run of (\d{4}-\d{2}-\d{2}) · machine: .+ · results: `bench/results/.+\.json`\*$",
        page,
        re.M,
    )
    commands = re.findall(r"^Command: `\.venv/bin/python bench/\w+\.py", page, re.M)
    # one caption and command per table (a placeholder may show two runs' tables)
    assert len(captions) == len(commands) >= len(hook.PLACEHOLDER.findall(PAGE.read_text()))


def test_the_newest_mirror_run_is_shown_with_its_own_figures() -> None:
    newest = max(RESULTS.glob("20*.json"))
    data = json.loads(newest.read_text())
    page = hook.fill("<!-- bench: mirror -->", RESULTS)
    assert f"Run of {data['date']}" in page
    ran = [name for name in ("kmigrate", "kmigrate_bytes", "mm2") if name in data]
    assert "mm2" in ran and len(ran) >= 2, ran
    for name in ran:  # a run may leave a contender out (--only)
        assert f"{data[name]['records_per_s']:,.0f}" in page, name
    if "turns" in data:  # the end-to-end medians, per topic
        assert "End to end (command to the last record on the target)" in page
        for topic, figures in data["kmigrate_bytes"]["by_size"].items():
            assert f"`{topic}`" in page and f"{figures['end_to_end_s']:.1f} s" in page


def test_a_field_the_file_lacks_is_said_not_recorded_never_guessed(tmp_path: Path) -> None:
    (tmp_path / "verify-2030-01-02.json").write_text(
        json.dumps({"date": "2030-01-02", "records": 10, "kmigrate_verify": {"wall_s": 2.0}})
    )
    page = hook.fill("<!-- bench: verify -->", tmp_path)
    assert "machine not recorded" in page
    assert "Kafka not recorded" in page
    assert "`--size`" in page  # the option the file does not record is named
    assert (
        "| `kmigrate verify --link`, start-up included | 2030-01-02 | not recorded | 2.0 s "
        "| not recorded | not recorded |" in page
    )


def test_a_placeholder_without_results_warns_so_a_strict_build_fails(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    page = hook.fill("<!-- bench: zk-move -->\n<!-- bench: nonsense -->", tmp_path)
    assert "no results file for `zk-move`" in page
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("zk-move" in w for w in warnings) and any("nonsense" in w for w in warnings)
