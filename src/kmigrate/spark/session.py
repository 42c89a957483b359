"""The SparkContext kmigrate's jobs run in.

Spark schedules, Python tasks move the bytes: jobs hand Spark small work items (offset
ranges) and the tasks read and write Kafka themselves with confluent-kafka, so no Spark
Kafka connector is needed. Runs locally by default and unchanged on any master
(standalone, YARN, Kubernetes): nothing here assumes the driver and executors share a
process or disk.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import kmigrate
from kmigrate.config import SparkConfig

if TYPE_CHECKING:
    from pyspark import SparkContext


def session_conf(spark: SparkConfig) -> dict[str, str]:
    """Spark settings for kmigrate's jobs; the user's ``spark.conf`` wins."""
    conf = {
        "spark.ui.enabled": "false",
        # kmigrate reports progress itself; Spark's stage bars would garble it.
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        # One attempt per task on clusters too: a failed write fails the batch, and the
        # mirror's resume logic (not a blind retry) decides what to write again.
        "spark.task.maxFailures": "1",
        # The driver JVM only schedules and ships small results: start it fast (the
        # C1 compiler alone and the serial collector save seconds of start-up).
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        # Python workers stay up between tasks: they keep their Kafka clients.
        "spark.python.worker.reuse": "true",
        # Executors run kmigrate's tasks: same interpreter as the driver by default
        # (on other hosts it must have the same packages installed; see
        # docs/how-to/spark-cluster.md).
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
    }
    conf.update(spark.conf)
    return conf


def build_context(
    spark: SparkConfig, app_name: str, extra: Mapping[str, str] | None = None
) -> SparkContext:
    """Start (or reuse) the SparkContext for a kmigrate job. No SparkSession: the jobs
    use no SQL, and creating one costs seconds of start-up."""
    # pyspark takes the executors' interpreter from this variable, not from the conf.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkConf, SparkContext  # a second of start-up: only when used

    conf = SparkConf().setAppName(app_name).setMaster(spark.master)
    for key, value in {**session_conf(spark), **(extra or {})}.items():
        conf.set(key, value)
    with _jvm_output_to(jvm_log_path()):
        context = SparkContext.getOrCreate(conf)
    context.setLogLevel("WARN")
    context.addPyFile(str(package_zip()))
    return context


def jvm_log_path() -> Path:
    """Where the Spark JVM's own output goes ($KMIGRATE_SPARK_LOG, else a file per process)."""
    given = os.environ.get("KMIGRATE_SPARK_LOG")
    return (
        Path(given) if given else Path(tempfile.gettempdir()) / f"kmigrate-spark-{os.getpid()}.log"
    )


@contextmanager
def _jvm_output_to(path: Path) -> Iterator[None]:
    """Start the JVM with its stdout and stderr in ``path``: Spark's start-up warnings
    would bury kmigrate's own one-line messages. Python's streams are restored after."""
    sys.stdout.flush()
    sys.stderr.flush()
    path.parent.mkdir(parents=True, exist_ok=True)
    saved = os.dup(1), os.dup(2)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(log, 1)
        os.dup2(log, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, log):
            os.close(fd)


def package_zip() -> Path:
    """kmigrate's own code as a zip for executors, so they never depend on a shared disk
    or on kmigrate being installed where they run (its dependencies must be)."""
    root = Path(kmigrate.__file__).parent
    target = Path(tempfile.mkdtemp(prefix="kmigrate-pyfiles-")) / "kmigrate.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".xml", ".typed") and "__pycache__" not in path.parts:
                archive.write(path, Path("kmigrate") / path.relative_to(root))
    return target
