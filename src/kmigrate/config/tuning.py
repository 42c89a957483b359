"""Tuning variables read from the environment (``KMIGRATE_MIRROR_TASK_BYTES``, ...):
whole numbers, checked before anything is asked of a cluster."""

from __future__ import annotations

import os
from typing import overload

from kmigrate.errors import ConfigError


@overload
def count_from_env(name: str, default: int, least: int = 0) -> int: ...
@overload
def count_from_env(name: str, default: None, least: int = 0) -> int | None: ...
def count_from_env(name: str, default: int | None, least: int = 0) -> int | None:
    """A whole number from environment variable ``name`` (``default`` when unset); a
    ConfigError (exit 2) naming the variable for anything else."""
    given = os.environ.get(name, "")
    if not given:
        return default
    if not given.isdigit() or int(given) < least:
        raise ConfigError(f"{name} must be a whole number >= {least}, not {given!r}")
    return int(given)
