"""A mirror in the background: one `kmigrate mirror start` child process per link."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from kmigrate.errors import MirrorError
from kmigrate.store import Store
from kmigrate.store.runs import get_run

START_TIMEOUT_S = 180.0


def spawn_mirror(store: Store, name: str, argv: list[str], folder: Path) -> int:
    """Run ``kmigrate ARGV`` (a `mirror start`) detached, logging to the link's folder;
    return its pid once it reports itself running, or raise with its reason."""
    folder.mkdir(parents=True, exist_ok=True)
    log_path = folder / "mirror.log"
    with open(log_path, "ab") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "kmigrate", *argv],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        code = child.poll()
        run = get_run(store, name)
        ours = run is not None and run.pid == child.pid
        if code is not None:
            reason = run.reason if ours and run and run.reason else None
            raise MirrorError(
                f"the mirror of link '{name}' exited with code {code}: "
                f"{reason or 'see ' + str(log_path)}"
            )
        # Waiting (a cluster blinked right after start) is a running mirror too.
        if ours and run and run.state.value in ("running", "waiting"):
            return child.pid
        time.sleep(0.3)
    raise MirrorError(
        f"the mirror of link '{name}' did not start within {START_TIMEOUT_S:.0f}s; see {log_path}"
    )
