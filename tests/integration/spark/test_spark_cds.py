"""The Spark driver maps its classes from kmigrate's class-data sharing archive: a job's
driver, started as every mirror and verify starts it, loads SparkContext from the
archive (the JVM's own class-loading log says where each class came from)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kmigrate.spark import cds_build

_DRIVER = """
import sys
from kmigrate.config import SparkConfig
from kmigrate.spark.session import build_context
log = sys.argv[1]
extra = {"spark.driver.defaultJavaOptions": f"-Xlog:class+load=info:file={log}"}
context = build_context(SparkConfig(), "cds-check", extra)
assert context.parallelize(range(4), 2).map(lambda n: n * 2).sum() == 12
"""


def _loaded_from(log: Path, name: str) -> str:
    lines = [line for line in log.read_text().splitlines() if f" {name} source: " in line]
    assert lines, f"{name} never loaded: {log}"
    return lines[0].split(" source: ", 1)[1]


def test_the_driver_maps_spark_from_the_archive(tmp_path: Path) -> None:
    assert cds_build.main([]) == 0  # made by `make jars`; made here when absent
    log = tmp_path / "classes.log"
    ran = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(log)],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert _loaded_from(log, "org.apache.spark.SparkContext") == "shared objects file (top)"
    assert _loaded_from(log, "java.lang.Object") == "shared objects file"  # the JDK's own
