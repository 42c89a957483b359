"""The Kafka jars the sandbox runs, fetched from Maven Central through the bundled pom.xml."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from kmigrate.errors import JarsUnavailableError

DEFAULT_KAFKA_VERSION = "4.3.1"
CACHE_ENV = "KMIGRATE_CACHE"
POM = Path(__file__).with_name("pom.xml")
_MARKER = ".complete"


def cache_dir() -> Path:
    """Where jars are kept: $KMIGRATE_CACHE, else ~/.cache/kmigrate."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "kmigrate")


def jar_dir(version: str) -> Path:
    return cache_dir() / "jars" / f"kafka-{version}"


def jars_cached(version: str) -> bool:
    return (jar_dir(version) / _MARKER).is_file()


def supported(version: str) -> bool:
    return version.startswith(("4.", "3.9."))


def ensure_jars(version: str = DEFAULT_KAFKA_VERSION) -> Path:
    """The folder holding every jar Kafka ``version`` needs, fetching them once with Maven."""
    if not supported(version):
        raise JarsUnavailableError(
            f"Kafka {version} is not supported by the sandbox; use a 4.x or 3.9.x version"
        )
    target = jar_dir(version)
    if (target / _MARKER).is_file():
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsUnavailableError("Maven (mvn) is not on PATH; install it to fetch Kafka's jars")
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    command = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(POM),
        "dependency:copy-dependencies",
        f"-Dkafka.version={version}",
        f"-DoutputDirectory={partial}",
    ]
    if version.startswith("3."):
        command.append("-Dkafka.line=3")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = _last_error_line(done.stdout + done.stderr)
        raise JarsUnavailableError(
            f"could not fetch Kafka {version} jars from Maven Central: {last}",
            detail=(done.stdout + done.stderr)[-3000:],
        )
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    (target / _MARKER).write_text(version)
    return target


def _last_error_line(output: str) -> str:
    errors = [line for line in output.splitlines() if "ERROR" in line]
    line = errors[0] if errors else (output.strip().splitlines() or ["mvn failed"])[-1]
    return " ".join(line.replace("[ERROR]", "").split())[:300]
