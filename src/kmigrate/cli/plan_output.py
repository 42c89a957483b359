"""Where a `plan` command writes: refused before anything runs when it cannot or should
not be written (shared by `plan new`, `reassign plan`)."""

from __future__ import annotations

from pathlib import Path

from kmigrate.errors import ConfigError, ConflictError


def writable(output: Path, force: bool) -> None:
    """Refuse a plan file that is a folder, exists (without --force), or whose folder
    does not exist."""
    if output.is_dir():
        raise ConfigError(f"{output} is a folder; give a file name for the plan")
    if output.exists() and not force:
        raise ConflictError(f"{output} exists; pass --force to overwrite it")
    if not output.parent.is_dir():
        raise ConfigError(f"{output}: folder {output.parent} does not exist")
