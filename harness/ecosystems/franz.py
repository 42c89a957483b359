"""The franz-go test client (harness/ecosystems/franz-go): where its binary is, built on first use.

``make clients`` builds it too; both put it at ``$KMIGRATE_CACHE/clients/franz`` and
rebuild when a source file is newer than the binary. Its modules come through the Go
module proxy (go.sum pins them).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from kmigrate.maven import cache_dir

SOURCE = Path(__file__).resolve().parent / "franz-go"
FILES = ("main.go", "go.mod", "go.sum")


class FranzUnavailable(RuntimeError):
    """The client cannot be built here (no Go toolchain, or the build failed)."""


def binary() -> Path:
    """The franz client's path, built with ``go build`` if missing or older than its source."""
    target = cache_dir() / "clients" / "franz"
    newest = max((SOURCE / name).stat().st_mtime for name in FILES)
    if target.is_file() and target.stat().st_mtime >= newest:
        return target
    go = shutil.which("go")
    if go is None:
        raise FranzUnavailable(
            "the franz-go test client needs Go >= 1.26 on PATH (https://go.dev/doc/install), "
            f"or a binary built from {SOURCE} at {target}"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [go, "build", "-trimpath", "-buildvcs=false", "-o", str(target), "."],
        cwd=SOURCE, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise FranzUnavailable(f"go build in {SOURCE} failed: {done.stderr.strip()[-2000:]}")
    return target


def start(mode: str, out: Path, *args: str) -> subprocess.Popen[bytes]:
    """``franz MODE ARGS`` running, its JSON lines going to ``out`` (stderr to ``out``.err).
    Stop it with SIGTERM: it flushes (produce) or commits (consume) and exits 0."""
    program = binary()
    with out.open("wb") as stdout, out.with_suffix(".err").open("wb") as stderr:
        return subprocess.Popen([str(program), mode, *args], stdout=stdout, stderr=stderr)


def stop(proc: subprocess.Popen[bytes], timeout: float = 60) -> int:
    """SIGTERM (flush or commit, then exit), SIGKILL if it has not exited in ``timeout``
    seconds; its exit code (-9 when killed)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


def events(out: Path, name: str | None = None) -> list[dict[str, Any]]:
    """The complete JSON lines written to ``out`` so far (those named ``name``, if given)."""
    text = out.read_text() if out.exists() else ""
    lines = [json.loads(line) for line in text.split("\n")[:-1]]
    return [e for e in lines if name is None or e["name"] == name]
