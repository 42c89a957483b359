"""The driver's class-data sharing archive: used when present, made once in the
background when absent (one build at a time across processes), off on request."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from kmigrate.spark import cds, cds_build


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KMIGRATE_CACHE", str(tmp_path))
    monkeypatch.delenv(cds.DISABLE_ENV, raising=False)
    return tmp_path


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The background builds started (their command lines), none really run."""
    started: list[list[str]] = []

    def popen(command: list[str], **_kwargs: Any) -> None:
        started.append(command)

    monkeypatch.setattr(cds.subprocess, "Popen", popen)
    return started


def test_an_archive_present_is_used(cache: Path, spawned: list[list[str]]) -> None:
    path = cds.archive_path()
    assert path is not None and path.is_relative_to(cache)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    assert cds.driver_options() == f"-XX:SharedArchiveFile={path}"
    assert spawned == []


def test_an_absent_archive_is_built_once_in_the_background(
    cache: Path, spawned: list[list[str]]
) -> None:
    assert cds.driver_options() == ""
    assert cds.driver_options() == ""  # a second driver while the first build runs
    path = cds.archive_path()
    assert path is not None
    assert len(spawned) == 1 and spawned[0][-1] == str(path)
    assert spawned[0][1:3] == ["-m", "kmigrate.spark.cds_build"]


def test_a_lock_left_by_a_dead_build_is_taken_over(cache: Path, spawned: list[list[str]]) -> None:
    path = cds.archive_path()
    assert path is not None
    lock = path.with_name(path.name + ".lock")
    lock.parent.mkdir(parents=True)
    lock.touch()
    assert cds.driver_options() == "" and spawned == []  # a build runs
    old = time.time() - 600
    os.utime(lock, (old, old))
    assert cds.driver_options() == "" and len(spawned) == 1


def test_off_when_asked(
    cache: Path, spawned: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cds.DISABLE_ENV, "0")
    assert cds.driver_options() == "" and spawned == []


def test_a_new_jdk_or_pyspark_gets_its_own_archive(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = cds.archive_path()
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert cds.archive_path() not in (None, first)


def test_the_builder_releases_its_lock(cache: Path, tmp_path: Path) -> None:
    path = tmp_path / "present.jsa"
    path.write_bytes(b"archive")
    lock = tmp_path / "present.jsa.lock"
    lock.touch()
    assert cds_build.main(["--lock", str(lock), str(path)]) == 0  # present: nothing to build
    assert not lock.exists()


def test_a_reinstalled_pyspark_gets_its_own_archive(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same version, same folder, new jar files: the JVM would refuse the old archive."""
    import pyspark

    jars = tmp_path / "site" / "pyspark" / "jars"
    jars.mkdir(parents=True)
    monkeypatch.setattr(pyspark, "__file__", str(jars.parent / "__init__.py"))
    first = cds.archive_path()
    os.utime(jars, ns=(0, jars.stat().st_mtime_ns + 1_000_000_000))  # installed again
    assert cds.archive_path() not in (None, first)
