"""Fetching jars: complete-or-absent folders and one-line errors."""

from __future__ import annotations

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
