"""Reading the YAML documents users review and edit (plans): one clear line for bad
YAML (with its line), a binary file, a document of the wrong kind, or a field that does
not validate. The file's text comes from ``kmigrate.config.read_user_file`` (which
refuses a file that is not UTF-8)."""

from __future__ import annotations

from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from kmigrate.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def yaml_mapping(text: str, where: str, not_a_mapping: str) -> dict[str, Any]:
    """The top-level mapping of a YAML document, or one line naming the file and why."""
    try:
        raw = yaml.safe_load(text)
    except yaml.reader.ReaderError:
        raise ConfigError(
            f"{where}: not a text document (it holds control characters: a binary file?)"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{where}: bad YAML{at}; fix the plan file") from None
    except (ValueError, RecursionError):
        # a value YAML cannot build (a date like 2026-13-01), nesting too deep
        raise ConfigError(
            f"{where}: bad YAML (a value that cannot be read); fix the plan file"
        ) from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: {not_a_mapping}")
    return raw


def validated(model: type[M], raw: dict[str, Any], where: str) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{where}: field '{field}': {first['msg']}") from None
