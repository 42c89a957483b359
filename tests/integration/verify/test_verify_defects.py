"""verify --link finds and locates each kind of difference, on real clusters and Spark.

One verify run covers every defect (one topic each); the report must say which
partitions differ, how, and at which source/target offsets, and nothing else."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.helpers import run_cli
from tests.integration.verify.conftest import AT, DEFECTS, FakeLink, N


@pytest.fixture(scope="module")
def verified(fake_link: FakeLink, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    html = tmp_path_factory.mktemp("report") / "verify.html"
    done = run_cli(
        "verify",
        "--link",
        fake_link.name,
        "--json",
        "--html",
        str(html),
        config=str(fake_link.config),
        timeout=280,
    )
    assert done.code == 1, f"verify should report differences (exit 1): {done.stderr}"
    report = json.loads(done.stdout)
    by_topic = {p["topic"]: p for p in report["partitions"]}
    return {
        "report": report,
        "html": html,
        "by_kind": {kind: by_topic[fake_link.topics[kind]] for kind in DEFECTS},
    }


def test_summary_counts_every_partition(verified: dict[str, Any]) -> None:
    summary = verified["report"]["summary"]
    assert verified["report"]["ok"] is False
    assert summary["partitions"] == len(DEFECTS)
    assert summary["matched"] == 1
    assert summary["mismatched"] == len(DEFECTS) - 1


def test_identical_partition_matches(verified: dict[str, Any]) -> None:
    same = verified["by_kind"]["same"]
    assert same["status"] == "match"
    assert same["source"]["records"] == same["target"]["records"] == N
    assert same["source"]["digest"] == same["target"]["digest"]
    assert same["difference"] is None


@pytest.mark.parametrize(
    ("kind", "difference", "fields"),
    [
        ("extra", "extra-on-target", []),
        ("missing", "missing-on-target", []),
        ("header", "changed", ["headers"]),
        ("timestamp", "changed", ["timestamp"]),
        ("swapped", "swapped", []),
    ],
)
def test_defect_is_located(
    verified: dict[str, Any], kind: str, difference: str, fields: list[str]
) -> None:
    found = verified["by_kind"][kind]
    assert found["status"] == "mismatch", found
    d = found["difference"]
    assert d["kind"] == difference, found["message"]
    assert (d["source_offset"], d["target_offset"]) == (AT, AT), found["message"]
    assert d["fields"] == fields


def test_changed_record_shows_both_sides(verified: dict[str, Any]) -> None:
    d = verified["by_kind"]["header"]["difference"]
    assert d["source_record"]["headers"][0] == {"key": "h", "value": str(AT)}
    assert d["target_record"]["headers"][0] == {"key": "h", "value": "changed"}
    # Binary header values are shown escaped, not raw.
    assert d["source_record"]["headers"][1]["value"] == "\\x00\\xff\\\\"
    assert d["source_record"]["timestamp_type"] == "CreateTime"


def test_extra_record_past_the_map_is_reported_not_compared(verified: dict[str, Any]) -> None:
    extra = verified["by_kind"]["extra"]
    assert {"kind": "unmapped-target", "side": "target", "start": N, "end": N + 1} in extra[
        "not_compared"
    ]
    assert extra["difference"]["target_record"]["key"] == "intruder"


def _chromium() -> str:
    found = shutil.which("chromium-headless-shell") or shutil.which("chromium")
    assert found, "chromium-headless-shell is missing: `make test` installs it (apt-get)"
    return found


def test_html_report_renders_in_chromium(verified: dict[str, Any], tmp_path: Path) -> None:
    html: Path = verified["html"]
    browser = _chromium()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files"]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", html.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "Source and target differ" in dom
    assert "extra-on-target" in dom and "missing-on-target" in dom and "swapped" in dom
    assert f"source offset {AT}" in dom
    shot = tmp_path / "report.png"
    subprocess.run(
        [browser, *flags, "--window-size=1280,1600", f"--screenshot={shot}", html.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    png = shot.read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 20_000, "the page rendered blank"
