"""The workspace opens what a command needs, when it needs it, and checks a cluster's
name before any client exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmigrate.config import load_settings
from kmigrate.errors import ConfigError, NotFoundError
from kmigrate.workspace import Workspace


def _workspace(tmp_path: Path) -> Workspace:
    config = tmp_path / "clusters.yaml"
    config.write_text(
        "clusters:\n"
        "  a: {bootstrap_servers: '127.0.0.1:1'}\n"
        "  b: {bootstrap_servers: '127.0.0.1:2'}\n"
        "store: {url: 'sqlite:///state.db'}\n"
    )
    return Workspace(load_settings(config))


def test_one_store_for_the_command_opened_from_the_settings(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    assert workspace.store is workspace.store
    assert workspace.links() == []


def test_an_unknown_cluster_or_link_is_one_line_naming_what_there_is(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    with pytest.raises(ConfigError, match="'c'"):
        workspace.admin("c")
    with pytest.raises(ConfigError, match="'c'"), workspace.admins("a", "c"):
        pass
    with pytest.raises(NotFoundError, match=r"no link named .nope.*known links: none"):
        workspace.link("nope")
