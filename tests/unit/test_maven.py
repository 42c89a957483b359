"""Fetching jars: complete-or-absent folders and one-line errors."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kmigrate.errors import JarsUnavailableError
from kmigrate.maven import fetch_jars, is_complete
from kmigrate.sandbox.jars import ensure_jars


def test_missing_maven_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JarsUnavailableError, match=r"Maven \(mvn\) is not on PATH"):
        fetch_jars(tmp_path / "pom.xml", tmp_path / "out", {}, "test jars")
    assert not (tmp_path / "out").exists()


def test_a_complete_folder_is_reused_without_maven(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "jars"
    target.mkdir()
    (target / ".complete").write_text("x")
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn: must not be needed
    assert fetch_jars(tmp_path / "pom.xml", target, {}, "test jars") == target
    assert is_complete(target)


def test_unsupported_kafka_version_is_refused_before_any_download() -> None:
    with pytest.raises(JarsUnavailableError, match=r"use a 4\.x or 3\.9\.x version"):
        ensure_jars("2.8.1")


def test_two_processes_fetching_at_once_both_get_a_complete_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parallel test workers (or two commands) fetch the same jars on a cold cache: each
    writes a folder of its own, the first rename wins, nothing half-written is left and
    neither deletes the other's result. A stand-in `mvn` writes one jar, slowly."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(
        "#!/bin/sh\nfor a; do case $a in -DoutputDirectory=*) out=${a#*=};; esac; done\n"
        'mkdir -p "$out"; sleep 0.3; echo jar > "$out/a.jar"\n'
    )
    mvn.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    target = tmp_path / "cache" / "jars"
    with ThreadPoolExecutor(4) as pool:
        done = list(pool.map(lambda _: fetch_jars(tmp_path / "pom.xml", target, {}, "x"), range(4)))
    assert done == [target] * 4
    assert is_complete(target) and (target / "a.jar").read_text() == "jar\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["jars"]
