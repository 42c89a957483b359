"""Spark's Kafka connector jars, at exactly pyspark's version (see pom.xml for why Maven)."""

from __future__ import annotations

from pathlib import Path

import pyspark

from kmigrate.maven import cache_dir, fetch_jars

POM = Path(__file__).with_name("pom.xml")


def connector_jars() -> list[Path]:
    """The connector's jars (fetched once), to hand to Spark as ``spark.jars``.

    Spark serves ``spark.jars`` to executors itself, so this works on clusters where
    executors cannot see the driver's disk.
    """
    version = pyspark.__version__
    folder = fetch_jars(
        POM,
        cache_dir() / "jars" / f"spark-kafka-{version}",
        {"spark.version": version},
        f"Spark {version}'s Kafka connector",
    )
    return sorted(folder.glob("*.jar"))
