"""A class-data sharing archive for the Spark driver JVM (AppCDS).

Loading and verifying Spark's classes is most of the driver's start-up, paid again by
every `mirror start`, `verify` and `migrate` process. The JVM can instead map classes it
archived in an earlier run: the archive is made once, by a separate JVM that starts a
SparkContext, runs a trivial job and exits with ``-XX:ArchiveClassesAtExit``, and is
kept in kmigrate's cache beside the jars. Every driver after that starts with
``-XX:SharedArchiveFile``.

Nothing here can break a job. The JVM checks an archive against itself and its class
path and ignores one that does not match (``-Xshare:auto``, the default), with a warning
in the Spark log; the archive's name carries the JDK and the pyspark install it was made
with, so a new JDK or a reinstalled pyspark makes a new one. ``KMIGRATE_SPARK_CDS=0``
turns it off.

Run ``python -m kmigrate.spark.cds_build`` to make it ahead of time (``make jars``
does); a driver that finds none starts one such run in the background, so the next is
quick.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kmigrate.maven import cache_dir

DISABLE_ENV = "KMIGRATE_SPARK_CDS"
# A build takes ~15 s; a lock older than this was left by a build that died.
_STALE_LOCK_S = 300.0


def enabled() -> bool:
    return os.environ.get(DISABLE_ENV, "1") != "0"


def archive_path() -> Path | None:
    """Where the archive for this JDK and pyspark lives (present or not); None when no
    ``java`` is found (Spark would not start either)."""
    java = _java()
    if java is None:
        return None
    import pyspark  # the version and location name the jars the archive holds

    real = java.resolve()
    # The JVM checks the archive against the jars' sizes and times: a reinstalled pyspark
    # (same version, same folder, new files) must get a new archive, not a refused one.
    jars = Path(pyspark.__file__).parent / "jars"
    built = jars.stat().st_mtime_ns if jars.is_dir() else 0
    identity = f"{real}|{real.stat().st_mtime_ns}|{pyspark.__version__}|{pyspark.__file__}|{built}"
    key = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return cache_dir() / "spark-cds" / f"driver-{pyspark.__version__}-{key}.jsa"


def driver_options(start_build: bool = True) -> str:
    """The driver JVM's options that use the archive, or "" when there is none yet
    (then, with ``start_build``, one background run makes it for the next driver)."""
    if not enabled():
        return ""
    path = archive_path()
    if path is None:
        return ""
    if path.is_file():
        return f"-XX:SharedArchiveFile={path}"
    if start_build:
        _start_background_build(path)
    return ""


def _start_background_build(path: Path) -> None:
    """One build at a time per archive, across processes: the lock file says one runs."""
    lock = path.with_name(path.name + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        if time.time() - lock.stat().st_mtime > _STALE_LOCK_S:
            lock.unlink(missing_ok=True)
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return
    os.close(fd)
    subprocess.Popen(
        [sys.executable, "-m", "kmigrate.spark.cds_build", "--lock", str(lock), str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # not stopped by Ctrl-C meant for the job that started it
    )


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return Path(home) / "bin" / "java"
    found = shutil.which("java")
    return Path(found) if found else None
