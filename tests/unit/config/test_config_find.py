from pathlib import Path

import pytest

from kmigrate.config import find_config_path, load_settings, sandbox_dir
from kmigrate.errors import ConfigError

YAML = "clusters:\n  {name}:\n    bootstrap_servers: 127.0.0.1:9092\n"


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """An empty cwd with no $KMIGRATE_CONFIG and no $KMIGRATE_SANDBOX_DIR."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("KMIGRATE_CONFIG", raising=False)
    monkeypatch.delenv("KMIGRATE_SANDBOX_DIR", raising=False)
    return cwd


def _write(path: Path, name: str = "c") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(YAML.format(name=name))
    return path


@pytest.fixture
def all_candidates(workdir, tmp_path, monkeypatch):
    """Every candidate exists; returns them in priority order."""
    explicit = _write(tmp_path / "explicit.yaml", "explicit")
    from_env = _write(tmp_path / "env.yaml", "env")
    monkeypatch.setenv("KMIGRATE_CONFIG", str(from_env))
    local = _write(workdir / "kmigrate.yaml", "local")
    sandbox = _write(tmp_path / "sandbox" / "clusters.yaml", "sandbox")
    monkeypatch.setenv("KMIGRATE_SANDBOX_DIR", str(sandbox.parent))
    return explicit, from_env, local, sandbox


def _same(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve()


def test_explicit_path_wins_over_everything(all_candidates):
    explicit, *_ = all_candidates
    assert _same(find_config_path(explicit), explicit)


def test_explicit_path_may_be_a_string(all_candidates):
    explicit, *_ = all_candidates
    assert _same(find_config_path(str(explicit)), explicit)


def test_env_var_wins_over_local_and_sandbox(all_candidates):
    _, from_env, _, _ = all_candidates
    assert _same(find_config_path(), from_env)


def test_local_kmigrate_yaml_wins_over_sandbox(all_candidates, monkeypatch):
    _, _, local, _ = all_candidates
    monkeypatch.delenv("KMIGRATE_CONFIG")
    assert _same(find_config_path(), local)


def test_sandbox_clusters_yaml_is_the_last_resort(all_candidates, monkeypatch):
    _, _, local, sandbox = all_candidates
    monkeypatch.delenv("KMIGRATE_CONFIG")
    local.unlink()
    assert _same(find_config_path(), sandbox)


def test_empty_env_var_counts_as_unset(workdir, monkeypatch):
    local = _write(workdir / "kmigrate.yaml")
    monkeypatch.setenv("KMIGRATE_CONFIG", "")
    assert _same(find_config_path(), local)


def test_default_sandbox_dir_is_under_the_cwd(workdir):
    sandbox = _write(workdir / ".kmigrate" / "sandbox" / "clusters.yaml")
    assert _same(sandbox_dir(), workdir / ".kmigrate" / "sandbox")
    assert _same(find_config_path(), sandbox)


def test_sandbox_dir_follows_env_var(workdir, tmp_path, monkeypatch):
    monkeypatch.setenv("KMIGRATE_SANDBOX_DIR", str(tmp_path / "sb"))
    assert sandbox_dir() == tmp_path / "sb"


def test_nothing_found_is_a_config_error(workdir):
    with pytest.raises(ConfigError, match="no cluster configuration found"):
        find_config_path()


def test_sandbox_dir_without_clusters_yaml_is_not_used(workdir, tmp_path, monkeypatch):
    (tmp_path / "sb").mkdir()
    monkeypatch.setenv("KMIGRATE_SANDBOX_DIR", str(tmp_path / "sb"))
    with pytest.raises(ConfigError):
        find_config_path()


def test_missing_explicit_path_is_an_error_not_a_fallback(all_candidates, tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as info:
        find_config_path(missing)
    assert "nope.yaml" in str(info.value)
    assert "--config" in str(info.value)


def test_missing_env_var_path_is_an_error_not_a_fallback(all_candidates, tmp_path, monkeypatch):
    monkeypatch.setenv("KMIGRATE_CONFIG", str(tmp_path / "gone.yaml"))
    with pytest.raises(ConfigError) as info:
        find_config_path()
    assert "gone.yaml" in str(info.value)
    assert "KMIGRATE_CONFIG" in str(info.value)


def test_a_directory_is_not_a_config_file(workdir, tmp_path):
    with pytest.raises(ConfigError):
        find_config_path(tmp_path)


def test_load_settings_reads_the_found_file(all_candidates, monkeypatch):
    monkeypatch.delenv("KMIGRATE_CONFIG")
    settings = load_settings()
    assert list(settings.clusters) == ["local"]


def test_load_settings_with_explicit_path(all_candidates):
    explicit, *_ = all_candidates
    settings = load_settings(explicit)
    assert list(settings.clusters) == ["explicit"]
    assert _same(settings.path, explicit)
