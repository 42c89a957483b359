"""Which class-data archive flags a sandbox JVM gets (sandbox/cds.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kmigrate.sandbox import cds


@pytest.fixture
def jars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KMIGRATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(cds.DISABLE_ENV, raising=False)
    folder = tmp_path / "kafka-4.3.1"
    folder.mkdir()
    for name in ("kafka_2.13-4.3.1.jar", "kafka-clients-4.3.1.jar"):
        (folder / name).write_bytes(b"jar")
    return folder


JAVA = "/bin/sh"  # any real file: its path and time name the archive


def test_no_archive_yet_no_flag_then_the_archive_is_mapped(jars: Path) -> None:
    assert cds.jvm_flags(JAVA, jars, cds.KAFKA) == []
    path = cds.archive_path(JAVA, jars, cds.KAFKA)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    assert cds.jvm_flags(JAVA, jars, cds.KAFKA) == [f"-XX:SharedArchiveFile={path}"]
    assert cds.jvm_flags(JAVA, jars, cds.ZOOKEEPER) == []  # its own archive, not made


def test_changed_jars_name_another_archive(jars: Path) -> None:
    before = cds.archive_path(JAVA, jars, cds.KAFKA)
    jar = jars / "kafka-clients-4.3.1.jar"
    jar.write_bytes(b"a rebuilt jar")
    assert cds.archive_path(JAVA, jars, cds.KAFKA) != before
    os.utime(jar, ns=(1, 1))
    assert cds.archive_path(JAVA, jars, cds.KAFKA) != before
    assert cds.archive_path(JAVA, jars, cds.ZOOKEEPER) != cds.archive_path(JAVA, jars, cds.KAFKA)


def test_while_dumping_only_the_node_writes_and_nothing_maps(jars: Path, tmp_path: Path) -> None:
    path = cds.archive_path(JAVA, jars, cds.KAFKA)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"an old archive")
    partial = tmp_path / "new.partial"
    with cds.dumping(cds.KAFKA, partial):
        assert cds.jvm_flags(JAVA, jars, cds.KAFKA) == [f"-XX:ArchiveClassesAtExit={partial}"]
        assert cds.jvm_flags(JAVA, jars, cds.KAFKA, node=False) == []  # storage formatting
    assert cds.jvm_flags(JAVA, jars, cds.KAFKA) == [f"-XX:SharedArchiveFile={path}"]


def test_turned_off(jars: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = cds.archive_path(JAVA, jars, cds.KAFKA)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    monkeypatch.setenv(cds.DISABLE_ENV, "0")
    assert cds.jvm_flags(JAVA, jars, cds.KAFKA) == []
