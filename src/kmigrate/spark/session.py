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
import time
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import kmigrate
from kmigrate.config import SparkConfig
from kmigrate.maven import cache_dir, files_key
from kmigrate.spark.cds import driver_options as cds_options

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
    spark: SparkConfig, app_name: str, extra: Mapping[str, str] | None = None, cds: bool = True
) -> SparkContext:
    """Start (or reuse) the SparkContext for a kmigrate job. No SparkSession: the jobs
    use no SQL, and creating one costs seconds of start-up. With ``cds``, the driver
    JVM maps Spark's classes from the class-data sharing archive (spark/cds.py)."""
    # pyspark takes the executors' interpreter from this variable, not from the conf.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkConf, SparkContext  # a second of start-up: only when used

    settings = {**session_conf(spark), **(extra or {})}
    options = cds_options() if cds and "spark.driver.extraJavaOptions" not in spark.conf else ""
    if options:
        settings["spark.driver.extraJavaOptions"] += f" {options}"
    conf = SparkConf().setAppName(app_name).setMaster(spark.master)
    for key, value in settings.items():
        conf.set(key, value)
    with SparkContext._lock:  # as SparkContext.getOrCreate does
        context = SparkContext._active_spark_context
        if context is None:
            gateway = SparkContext._gateway or _launch_gateway(conf, jvm_log_path())
            context = SparkContext(conf=conf, gateway=gateway)
    context.setLogLevel("WARN")
    context.addPyFile(str(package_zip()))
    return context


def jvm_log_path() -> Path:
    """Where the Spark JVM's own output goes ($KMIGRATE_SPARK_LOG, else a file per process)."""
    given = os.environ.get("KMIGRATE_SPARK_LOG")
    return (
        Path(given) if given else Path(tempfile.gettempdir()) / f"kmigrate-spark-{os.getpid()}.log"
    )


def _launch_gateway(conf: Any, log: Path) -> Any:
    """Spark's JVM started with its stdout and stderr in ``log``: its start-up warnings
    would bury kmigrate's one-line messages. Only the JVM's streams go there: kmigrate's
    own output stays where it was."""
    from pyspark.java_gateway import launch_gateway

    log.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        return launch_gateway(conf, popen_kwargs={"stdout": fd, "stderr": fd})
    finally:
        os.close(fd)  # the JVM holds its own copy


class OnDemand:
    """A SparkContext started at its first use, not before (``factory`` starts it).

    A mirror that keeps up copies its small batches in its own process and may never
    need executors: on a local master they would be a JVM and a few Python workers idle
    on the mirror's own machine (seconds of CPU to start, hundreds of MB held)."""

    def __init__(self, factory: Callable[[], SparkContext]) -> None:
        self._factory = factory
        self._context: SparkContext | None = None

    @property
    def started(self) -> bool:
        return self._context is not None

    def __call__(self) -> SparkContext:
        if self._context is None:
            self._context = self._factory()
        return self._context

    def stop(self) -> None:
        if self._context is not None:
            self._context.stop()
            self._context = None


def is_local(master: str) -> bool:
    """A master whose executors run in the driver's own process and machine."""
    return master == "local" or master.startswith("local[")


def package_zip() -> Path:
    """kmigrate's own code as a zip for executors, so they never depend on a shared disk
    or on kmigrate being installed where they run (its dependencies must be). Made once
    per version of the code (its files' names, sizes and times) under the cache folder:
    compressing it took 0.4 s of CPU at every job's start."""
    root = Path(kmigrate.__file__).parent
    files = [
        path
        for path in sorted(root.rglob("*"))
        if path.suffix in (".py", ".xml", ".typed") and "__pycache__" not in path.parts
    ]
    target = cache_dir() / "pyfiles" / f"kmigrate-{files_key(files)}.zip"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(path, Path("kmigrate") / path.relative_to(root))
    os.replace(partial, target)  # whole or not at all, whichever process wins
    _forget_old_zips(target)
    return target


def _forget_old_zips(kept: Path) -> None:
    """Zips of other versions of the code, a day after they were made (a job started
    before may still be handing its zip to executors)."""
    day_ago = time.time() - 86_400
    for old in kept.parent.glob("kmigrate-*.zip"):
        if old != kept and old.stat().st_mtime < day_ago:
            old.unlink(missing_ok=True)
