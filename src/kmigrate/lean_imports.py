"""kio (the Kafka protocol library the gateway and the byte copy speak) without its
hypothesis hooks.

kio's phantom types register test strategies with hypothesis whenever hypothesis is
importable: where it is installed (kmigrate's dev extras, a data team's shared
environment), every process that speaks the protocol imports all of hypothesis first.
Measured: importing the byte copy takes 0.19 s of CPU without it and 0.65 s with it, paid
by each gateway, each mirror and each Spark Python worker. kmigrate never draws kio types
from hypothesis, so kio's phantom module is loaded as if hypothesis were absent, as it is
in a production install; nor does hypothesis make its ./.hypothesis folder in the folder
a command runs in. hypothesis itself stays importable for everything else.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

PHANTOM = "kio.static._phantom"  # the one kio module that looks for hypothesis


class _Hidden(importlib.abc.Loader):
    """Runs ``loader`` with hypothesis hidden from ``import`` (unless already loaded)."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        hidden = "hypothesis" not in sys.modules
        if hidden:
            sys.modules["hypothesis"] = None  # type: ignore[assignment]  # import raises
        try:
            self._loader.exec_module(module)
        finally:
            if hidden and sys.modules.get("hypothesis", 0) is None:
                del sys.modules["hypothesis"]


class _KioWithoutHypothesis(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != PHANTOM or "hypothesis" in sys.modules:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _Hidden(spec.loader)
        return spec


def install() -> None:
    """Put the finder first on sys.meta_path (once per process)."""
    if not any(isinstance(f, _KioWithoutHypothesis) for f in sys.meta_path):
        sys.meta_path.insert(0, _KioWithoutHypothesis())
