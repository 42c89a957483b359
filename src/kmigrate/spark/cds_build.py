"""Making the Spark driver's class-data archive (spark/cds.py says what it is for): a
SparkContext whose JVM archives every class it loaded as it exits.

``python -m kmigrate.spark.cds_build [--lock FILE] [PATH]`` makes it (``make jars``
does; a driver that finds none starts one in the background)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kmigrate.config import SparkConfig
from kmigrate.spark.cds import archive_path
from kmigrate.spark.session import build_context, jvm_log_path, session_conf


def build(path: Path) -> Path:
    """Make the archive at ``path``: a SparkContext whose JVM archives every class it
    loaded when it exits. Written under a temporary name and renamed once the JVM has
    exited, so a driver never maps a half-written archive."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    base = session_conf(SparkConfig())["spark.driver.extraJavaOptions"]
    options = f"{base} -XX:ArchiveClassesAtExit={partial}"
    try:
        context = build_context(
            SparkConfig(), "kmigrate-cds", {"spark.driver.extraJavaOptions": options}, cds=False
        )
        context.parallelize(range(4), 2).map(lambda n: n + 1).collect()
        gateway = context._gateway  # the JVM process pyspark started
        context.stop()
        # The JVM exits when its stdin closes, and archives on its way out.
        gateway.proc.stdin.close()
        gateway.proc.wait(timeout=180)
        if not partial.is_file():
            raise RuntimeError(f"the JVM wrote no archive (see {_log_hint()})")
        os.replace(partial, path)
        return path
    finally:
        partial.unlink(missing_ok=True)


def _log_hint() -> str:
    return str(jvm_log_path())


def main(argv: list[str]) -> int:
    """``python -m kmigrate.spark.cds_build [--lock FILE] [PATH]``: make the archive (at its
    usual place by default); prints where it is."""
    lock = None
    if argv[:1] == ["--lock"]:
        lock, argv = Path(argv[1]), argv[2:]
    try:
        path = Path(argv[0]) if argv else archive_path()
        if path is None:
            print("no java on PATH (set JAVA_HOME): no archive made", file=sys.stderr)
            return 1
        if not path.is_file():
            build(path)
        print(path)
        return 0
    finally:
        if lock is not None:
            lock.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
