"""The admin calls librdkafka can kill its process with (DescribeCluster's `Assertion
'rko_result' failed`, OffsetFetch's NULL consumer group) run in a child process: a
crash there is a failed call, kmigrate lives on and the next call gets a new child."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmigrate.config import ClusterConfig
from kmigrate.errors import ClusterUnavailableError, ClusterUnreachableError
from kmigrate.kafka.admin import ClusterAdmin, isolated

NOWHERE = ClusterConfig(name="gone", bootstrap_servers="127.0.0.1:1", timeout_s=1)


def test_a_native_abort_in_the_child_is_a_failed_call_and_the_next_call_starts_anew(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    aborting = tmp_path / "abort.py"
    aborting.write_text("import os, sys\nsys.stdin.readline()\nsys.stdin.readline()\nos.abort()\n")
    monkeypatch.setattr(isolated, "CHILD", aborting)
    with ClusterAdmin(NOWHERE) as admin:
        with pytest.raises(ClusterUnavailableError) as caught:
            admin.describe_cluster()
        assert "SIGABRT" in str(caught.value) and caught.value.cluster == "gone"
        monkeypatch.setattr(isolated, "CHILD", Path(isolated.__file__).with_name("child.py"))
        with pytest.raises(ClusterUnreachableError):  # a new child, answering as kmigrate does
            admin.describe_cluster()


def test_the_child_reports_an_unreachable_cluster_as_kmigrate_does() -> None:
    with ClusterAdmin(NOWHERE) as admin, pytest.raises(ClusterUnreachableError) as caught:
        admin.describe_cluster()
    assert "'gone'" in str(caught.value)
