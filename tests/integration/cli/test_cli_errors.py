"""Every user error: one line on stderr naming what to fix, a non-zero exit, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.helpers import CliResult, run_cli
from tests.integration.conftest import Clusters


def assert_one_line_error(result: CliResult, code: int, *needles: str) -> None:
    assert result.code == code, (result.code, result.stderr)
    assert result.stderr.startswith("error: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    for needle in needles:
        assert needle in result.stderr


def test_unknown_cluster_lists_the_known_ones(clusters: Clusters) -> None:
    result = run_cli("topics", "list", "--cluster", "nope", config=str(clusters.config_path))
    assert_one_line_error(result, 2, "unknown cluster 'nope'", "source", "target")


def test_unreachable_bootstrap_fails_within_the_timeout(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("clusters:\n  gone:\n    bootstrap_servers: 127.0.0.1:1\n    timeout_s: 2\n")
    result = run_cli("clusters", "describe", "gone", config=str(config), timeout=30)
    assert_one_line_error(
        result,
        3,
        "cannot reach cluster 'gone' at 127.0.0.1:1 within 2s",
        "Connection refused",
        "bootstrap_servers",
    )


def test_missing_topic_is_named(clusters: Clusters) -> None:
    result = run_cli(
        "topics",
        "describe",
        "no-such-topic",
        "--cluster",
        "source",
        config=str(clusters.config_path),
    )
    assert_one_line_error(result, 4, "topic 'no-such-topic' does not exist on cluster 'source'")


def test_missing_group_is_named(clusters: Clusters) -> None:
    result = run_cli(
        "groups",
        "describe",
        "no-such-group",
        "--cluster",
        "source",
        config=str(clusters.config_path),
    )
    assert_one_line_error(result, 4, "consumer group 'no-such-group' does not exist")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("clusters:\n  a: [\n", "bad YAML at line 3, column 1"),
        ("clusters:\n  a:\n    bootstrap: x\n", "clusters.a.bootstrap_servers: field required"),
        ("- just\n- a list\n", "expected a mapping"),
        (
            "clusters:\n  a:\n    bootstrap_servers: x\n    properties:\n"
            "      sasl.password: ${UNSET_KMIGRATE_TEST_VAR}\n",
            "environment variable UNSET_KMIGRATE_TEST_VAR is not set",
        ),
    ],
)
def test_bad_config_file_names_the_problem(tmp_path: Path, text: str, needle: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(text)
    result = run_cli("topics", "list", "--cluster", "a", config=str(config))
    assert_one_line_error(result, 2, str(config), needle)


def test_missing_config_file(tmp_path: Path) -> None:
    result = run_cli("topics", "list", "--cluster", "a", config=str(tmp_path / "none.yaml"))
    assert_one_line_error(result, 2, "none.yaml", "does not exist")


def test_no_config_anywhere_says_how_to_get_one(tmp_path: Path) -> None:
    result = run_cli(
        "topics",
        "list",
        "--cluster",
        "a",
        env={"KMIGRATE_CONFIG": "", "KMIGRATE_SANDBOX_DIR": str(tmp_path / "x")},
    )
    assert_one_line_error(result, 2, "no cluster configuration found", "kmigrate sandbox up")


def test_sandbox_rejects_too_many_brokers(tmp_path: Path) -> None:
    result = run_cli("sandbox", "up", "--dir", str(tmp_path / "sb"), "--brokers", "7")
    assert result.code == 2
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "sb").exists()


def test_sandbox_down_of_an_unknown_cluster_changes_nothing(clusters: Clusters) -> None:
    if clusters.sandbox_dir is None:
        pytest.fail("this test needs the session sandbox")
    result = run_cli("sandbox", "down", "--dir", str(clusters.sandbox_dir), "--cluster", "nope")
    assert_one_line_error(result, 7, "no sandbox cluster named nope")
    status = run_cli("sandbox", "status", "--dir", str(clusters.sandbox_dir))
    assert status.code == 0
