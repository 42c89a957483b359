"""Finding and reading clusters.yaml: --config, $KMIGRATE_CONFIG, ./kmigrate.yaml or the
sandbox's; `${KEY}` references from the environment or the env_file; one clear line
for a file that is missing, unreadable or wrong."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from kmigrate.client_properties import check_names
from kmigrate.config.model import Settings
from kmigrate.errors import ConfigError, NotFoundError

CONFIG_ENV = "KMIGRATE_CONFIG"
LOCAL_CONFIG = Path("kmigrate.yaml")
SANDBOX_DIR_ENV = "KMIGRATE_SANDBOX_DIR"
DEFAULT_SANDBOX_DIR = Path(".kmigrate/sandbox")
SANDBOX_CONFIG_NAME = "clusters.yaml"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def find_config_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The clusters.yaml to use: --config, then $KMIGRATE_CONFIG, then ./kmigrate.yaml,
    then the running sandbox's."""
    if explicit:
        return _existing(Path(explicit), "--config")
    if os.environ.get(CONFIG_ENV):
        return _existing(Path(os.environ[CONFIG_ENV]), f"${CONFIG_ENV}")
    if LOCAL_CONFIG.is_file():
        return LOCAL_CONFIG
    sandbox = sandbox_dir() / SANDBOX_CONFIG_NAME
    if sandbox.is_file():
        return sandbox
    raise ConfigError(
        "no cluster configuration found: pass --config FILE, set $KMIGRATE_CONFIG, "
        "create ./kmigrate.yaml, or start local clusters with `kmigrate sandbox up`"
    )


def sandbox_dir() -> Path:
    """The default sandbox run directory ($KMIGRATE_SANDBOX_DIR or .kmigrate/sandbox)."""
    return Path(os.environ.get(SANDBOX_DIR_ENV) or DEFAULT_SANDBOX_DIR)


def _existing(path: Path, origin: str) -> Path:
    if not path.is_file():
        raise ConfigError(f"config file {path} (from {origin}) does not exist")
    return path


def load_settings(explicit: str | os.PathLike[str] | None = None) -> Settings:
    """Load and validate clusters.yaml, substituting ${ENV} references."""
    path = find_config_path(explicit)
    return parse_settings(read_user_file(path, "config file"), path)


def read_user_file(path: Path, what: str) -> str:
    """The text of a file the user named (a plan, a config, ...), or one line saying why
    not: it does not exist (exit 4), it is a folder, cannot be read, is not UTF-8 text
    or holds binary data (exit 2)."""
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a folder, not a file")
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise NotFoundError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"cannot read {what} {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} "
            f"at offset {exc.start}); save it as UTF-8"
        ) from None
    if "\x00" in text:
        raise ConfigError(f"cannot read {what} {path}: not text (it holds binary data)")
    return text


def parse_settings(text: str, path: Path) -> Settings:
    """Validate the text of a clusters.yaml; ``path`` anchors relative paths and messages."""
    raw = _parse_yaml(text, path)
    env_file = raw.get("env_file")
    if env_file is not None and not isinstance(env_file, str):
        raise ConfigError(f"{path}: env_file must be a file path")
    env = dict(read_env_file(path.parent / env_file)) if env_file else {}
    env.update(os.environ)
    raw = _substitute(raw, env, path, loc="")
    clusters = raw.get("clusters")
    ensembles = raw.get("zookeeper") or {}
    if not isinstance(clusters, dict) and not (clusters is None and ensembles):
        raise ConfigError(f"{path}: 'clusters:' must map cluster names to their settings")
    if not isinstance(ensembles, dict):
        raise ConfigError(f"{path}: 'zookeeper:' must map ensemble names to their settings")
    if clusters is None:
        raw.pop("clusters", None)
    for section in (clusters or {}, ensembles):
        for name, entry in section.items():
            if isinstance(entry, dict):
                entry.setdefault("name", name)
    try:
        settings = Settings.model_validate({**raw, "path": path})
    except ValidationError as exc:
        raise ConfigError(f"{path}: {_describe_validation(exc)}") from None
    if not settings.clusters and not settings.zookeeper:
        raise ConfigError(f"{path}: no clusters defined under 'clusters:'")
    _check_property_names(settings, path)
    return settings


def _check_property_names(settings: Settings, path: Path) -> None:
    """Java-client names in any client properties are refused with their librdkafka
    equivalent (files are checked when a cluster is used: ``Settings.cluster``)."""
    for name, cluster in settings.clusters.items():
        check_names(f"{path}: cluster '{name}'", cluster.properties)
    principals = settings.gateway.principals if settings.gateway else {}
    for principal, overrides in principals.items():
        for name, properties in overrides.items():
            check_names(f"{path}: gateway principal '{principal}' on '{name}'", properties)


def _parse_yaml(text: str, path: Path) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(text)
    except yaml.reader.ReaderError:
        raise ConfigError(f"{path}: not a text file (control characters: a binary file?)") from None
    except (ValueError, RecursionError):
        raise ConfigError(f"{path}: bad YAML: a value that cannot be read (a date?)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        # YAML quotes the offending text (an alias, a tag) and that text may be a
        # password: name the place, never the content.
        problem = re.sub(r"'[^']*'", "'...'", problem)
        raise ConfigError(f"{path}: bad YAML{where}: {problem}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping with a 'clusters:' key at the top")
    return raw


def _describe_validation(exc: ValidationError) -> str:
    # Never include the offending input: it may be a password.
    errors = exc.errors(include_input=False, include_url=False)
    shown = [
        f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg'].lower()}"
        for e in errors[:3]
    ]
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return "; ".join(shown) + more


def read_env_file(path: Path) -> Mapping[str, str]:
    """KEY=VALUE lines (optional `export`, quotes and # comments) of an env file."""
    if not path.exists():
        raise ConfigError(f"env_file {path} does not exist")
    lines = read_user_file(path, "env_file").splitlines()
    values = {}
    for raw in lines:
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.removeprefix("export ").partition("=")
            values[key.strip()] = value.strip().strip("'\"")
    return values


def _substitute(value: Any, env: Mapping[str, str], path: Path, loc: str) -> Any:
    if isinstance(value, dict):
        return {k: _substitute(v, env, path, f"{loc}.{k}".lstrip(".")) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, env, path, f"{loc}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str):
        return _ENV_REF.sub(lambda m: _env_value(m, env, path, loc), value)
    return value


def _env_value(match: re.Match[str], env: Mapping[str, str], path: Path, loc: str) -> str:
    name, default = match.group(1), match.group(2)
    if name in env:
        return env[name]
    if default is not None:
        return default
    raise ConfigError(f"{path}: environment variable {name} is not set (used in {loc})")
