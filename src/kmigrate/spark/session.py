"""The SparkSession kmigrate's jobs run in, with Spark's Kafka connector at exactly
pyspark's version.

Runs on ``local[*]`` by default and unchanged on any master (standalone, YARN,
Kubernetes): nothing here assumes the driver and executors share a process or disk.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

from kmigrate.config import SparkConfig
from kmigrate.spark.connector import connector_jars


def session_conf(spark: SparkConfig) -> dict[str, str]:
    """Spark settings for kmigrate's jobs; the user's ``spark.conf`` wins."""
    conf = {
        "spark.jars": ",".join(str(p) for p in connector_jars()),
        "spark.ui.enabled": "false",
        # kmigrate reports progress itself; Spark's stage bars would garble it.
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        # One attempt per task on clusters too: a failed write fails the batch, and the
        # mirror's resume logic (not a blind retry) decides what to write again.
        "spark.task.maxFailures": "1",
    }
    conf.update(spark.conf)
    return conf


def build_session(
    spark: SparkConfig, app_name: str, extra: Mapping[str, str] | None = None
) -> SparkSession:
    """Start (or reuse) the SparkSession for a kmigrate job."""
    builder = SparkSession.builder.appName(app_name).master(spark.master)
    for key, value in {**session_conf(spark), **(extra or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
