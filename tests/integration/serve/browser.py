"""A real headless Chromium (Debian's package, which `make test` installs) driven by
Playwright for Python, and a real `kmigrate serve` process on a free port.

Playwright cannot download its own browser here; it drives the system's through
``executable_path``. The flags keep Chromium off the network it would try at start
(component updates, sync), which this machine refuses."""

from __future__ import annotations

import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, sync_playwright

from harness.helpers import wait_for
from kmigrate.net import free_ports

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    found = shutil.which("chromium-headless-shell") or shutil.which("chromium")
    assert found, "chromium-headless-shell is missing: `make test` installs it (apt-get)"
    return found


@contextmanager
def chromium() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class Server:
    """`kmigrate serve` in its own process, answering on 127.0.0.1:port."""

    def __init__(self, config: Path, log: Path, *extra: str) -> None:
        (self.port,) = free_ports(1)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self._out = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kmigrate", "--config", str(config), "serve",
             "--listen", f"127.0.0.1:{self.port}", "--interval", "1", *extra],
            stdout=self._out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        wait_for(
            lambda: self._healthy() or self.process.poll() is not None,
            timeout=60,
            message=f"kmigrate serve answering on {self.url}",
        )
        assert self.process.poll() is None, self.log.read_text()

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)
        self._out.close()
