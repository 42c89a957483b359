"""The Kafka jars the sandbox runs, fetched from Maven Central through the bundled pom.xml."""

from __future__ import annotations

from pathlib import Path

from kmigrate.errors import JarsUnavailableError
from kmigrate.maven import cache_dir, fetch_jars, is_complete

DEFAULT_KAFKA_VERSION = "4.3.1"
POM = Path(__file__).with_name("pom.xml")


def jar_dir(version: str) -> Path:
    return cache_dir() / "jars" / f"kafka-{version}"


def jars_cached(version: str) -> bool:
    return is_complete(jar_dir(version))


def supported(version: str) -> bool:
    return version.startswith(("4.", "3.9."))


def ensure_jars(version: str = DEFAULT_KAFKA_VERSION) -> Path:
    """The folder holding every jar Kafka ``version`` needs, fetching them once with Maven."""
    if not supported(version):
        raise JarsUnavailableError(
            f"Kafka {version} is not supported by the sandbox; use a 4.x or 3.9.x version"
        )
    properties = {"kafka.version": version}
    if version.startswith("3."):
        properties["kafka.line"] = "3"
    return fetch_jars(POM, jar_dir(version), properties, f"Kafka {version} jars")
