"""The sandbox's Schema Registry build: its pinned version and its cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmigrate.errors import SandboxError
from kmigrate.sandbox import schema_registry


def test_the_bundled_module_pins_the_registry_and_names_the_cache_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KMIGRATE_CACHE", str(tmp_path))
    assert (schema_registry.MODULE_DIR / "go.sum").is_file()
    assert schema_registry.binary_path() == (
        tmp_path / "schema-registry" / "v0.2.1" / "schema-registry"
    )


def test_a_go_mod_without_the_registry_is_refused() -> None:
    with pytest.raises(SandboxError, match="requires no axonops-schema-registry version"):
        schema_registry.pinned_version("module x\n\ngo 1.26.0\n")


def test_missing_go_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KMIGRATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxError, match=r"Go is not on PATH; install Go >= 1\.26"):
        schema_registry.ensure_registry()
    assert not (tmp_path / "cache").exists()


def test_a_built_registry_is_reused_without_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KMIGRATE_CACHE", str(tmp_path))
    built = schema_registry.binary_path()
    built.parent.mkdir(parents=True)
    built.write_text("a registry")
    monkeypatch.setenv("PATH", str(tmp_path))  # no go: must not be needed
    assert schema_registry.ensure_registry() == built


@pytest.mark.parametrize(
    "require",
    [
        "require github.com/axonops/axonops-schema-registry v0.3.0",
        "require (\n\tgithub.com/axonops/axonops-schema-registry v0.3.0 // indirect\n)",
    ],
)
def test_the_version_is_read_from_either_form_of_require(require: str) -> None:
    assert schema_registry.pinned_version(f"module x\n\ngo 1.26.0\n\n{require}\n") == "v0.3.0"
