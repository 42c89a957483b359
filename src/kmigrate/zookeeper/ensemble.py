"""Which ZooKeeper ensemble a command means: a name in clusters.yaml, or a literal
``host:port,...`` connect string."""

from __future__ import annotations

import re

from kmigrate.config import EnsembleConfig, Settings
from kmigrate.errors import ConfigError

_CONNECT = re.compile(r"^[\w.-]+:\d+(,[\w.-]+:\d+)*$")


def resolve_ensemble(settings: Settings, value: str) -> EnsembleConfig:
    """An ensemble by its name in clusters.yaml, or a literal ``host:port,...`` string."""
    if value in settings.zookeeper:
        return settings.ensemble(value)
    if _CONNECT.match(value):
        return EnsembleConfig(name=value, connect=value)
    if "/" in value:
        raise ConfigError(f"'{value}': give the ensemble without a chroot (use --chroot)")
    return settings.ensemble(value)  # raises, listing the known names
