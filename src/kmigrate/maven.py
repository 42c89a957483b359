"""Jars from Maven Central, fetched once with Maven from a pom bundled with kmigrate.

Used for the sandbox's Kafka jars and for Spark's Kafka connector. Jars land in
$KMIGRATE_CACHE (default ~/.cache/kmigrate) under a folder that is complete or absent:
Maven writes into a ``.partial-*`` folder of its own (two processes may fetch the same
jars at once: parallel test workers, two commands) that is renamed when it succeeded;
the first rename wins and the other's copy is dropped.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from kmigrate.errors import JarsUnavailableError

CACHE_ENV = "KMIGRATE_CACHE"
_MARKER = ".complete"


def cache_dir() -> Path:
    """Where downloads are kept: $KMIGRATE_CACHE, else ~/.cache/kmigrate."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "kmigrate")


def files_key(files: Iterable[Path]) -> str:
    """16 hex digits naming ``files`` as they are now (path, size, time): the key of
    something made from them and kept in the cache, made again when one changes."""
    key = hashlib.sha256()
    for path in files:
        found = path.stat()
        key.update(f"{path}\0{found.st_size}\0{found.st_mtime_ns}\n".encode())
    return key.hexdigest()[:16]


def is_complete(target: Path) -> bool:
    return (target / _MARKER).is_file()


def fetch_jars(pom: Path, target: Path, properties: Mapping[str, str], what: str) -> Path:
    """``target`` holding every runtime jar of ``pom`` (resolved with ``properties``)."""
    if is_complete(target):
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsUnavailableError(f"Maven (mvn) is not on PATH; install it to fetch {what}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f"{target.name}.partial-", dir=target.parent))
    try:
        command = [
            mvn,
            "-B",
            "-q",
            "-f",
            str(pom),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={partial}",
            *(f"-D{k}={v}" for k, v in properties.items()),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            output = done.stdout + done.stderr
            raise JarsUnavailableError(
                f"could not fetch {what} from Maven Central: {_first_error(output)}",
                detail=output[-3000:],
            )
        (partial / _MARKER).write_text(" ".join(f"{k}={v}" for k, v in properties.items()))
        if not is_complete(target):
            shutil.rmtree(target, ignore_errors=True)  # an incomplete copy of an older run
            with contextlib.suppress(OSError):  # another process renamed its copy first
                partial.rename(target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    if not is_complete(target):
        raise JarsUnavailableError(f"could not fetch {what}: {target} is incomplete")
    return target


def _first_error(output: str) -> str:
    errors = [line for line in output.splitlines() if "ERROR" in line]
    line = errors[0] if errors else (output.strip().splitlines() or ["mvn failed"])[-1]
    return " ".join(line.replace("[ERROR]", "").split())[:300]
