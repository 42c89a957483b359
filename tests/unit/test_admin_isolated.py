"""DescribeCluster runs in a child process: librdkafka can abort the process that calls it
(`rd_kafka_admin_response_parse: Assertion 'rko_result' failed`); kmigrate must not die."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmigrate.config import ClusterConfig
from kmigrate.errors import ClusterUnavailableError, ClusterUnreachableError
from kmigrate.kafka.admin import ClusterAdmin, isolated

NOWHERE = ClusterConfig(name="gone", bootstrap_servers="127.0.0.1:1", timeout_s=1)


def test_a_native_abort_while_describing_the_cluster_is_a_failed_call(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    aborting = tmp_path / "abort.py"
    aborting.write_text("import os, sys\nsys.stdin.read()\nos.abort()\n")
    monkeypatch.setattr(isolated, "CHILD", aborting)
    with ClusterAdmin(NOWHERE) as admin, pytest.raises(ClusterUnavailableError) as caught:
        admin.describe_cluster()
    assert "SIGABRT" in str(caught.value)
    assert caught.value.cluster == "gone"


def test_the_child_reports_an_unreachable_cluster_as_kmigrate_does() -> None:
    with ClusterAdmin(NOWHERE) as admin, pytest.raises(ClusterUnreachableError) as caught:
        admin.describe_cluster()
    assert "'gone'" in str(caught.value)
