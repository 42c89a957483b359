"""The KRaft migration's command templates for real hosts: each runs with its values
(the broker's changes as 'set K=V' / 'remove K' lines, the controller's properties
file), and bad templates are refused before anything runs."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from kmigrate.errors import CommandFailedError, ConfigError
from kmigrate.kraft.commands import CommandOperator, Templates
from kmigrate.kraft.plan import ConfigChange


def _operator(templates: Templates) -> CommandOperator:
    return CommandOperator(templates, {1: "kafka1.example:9092"}, {3000: "ctl1.example"},
                           lambda _m: None)  # fmt: skip


def test_each_template_runs_with_its_values(tmp_path: Path) -> None:
    log = shlex.quote(str(tmp_path / "ran.log"))
    operator = _operator(Templates(
        broker=f"echo broker {{host}} {{broker}} {{quick_stop}} >> {log}; "
        f"cat {{changes_file}} >> {log}",
        controller=f"echo {{action}} {{host}} {{id}} {{cluster_id}} >> {log}; "
        f"cat {{properties_file}} >> {log}",
    ))  # fmt: skip
    operator.start_controller(3000, {"process.roles": "controller", "node.id": "3000"}, "abc")
    operator.restart_broker(
        1, ConfigChange(set={"process.roles": "broker"}, remove=["broker.id"]), quick_stop=True
    )
    operator.stop_controller(3000, wipe=True)
    assert (tmp_path / "ran.log").read_text().splitlines() == [
        "start ctl1.example 3000 abc",
        "process.roles=controller",
        "node.id=3000",
        "broker kafka1.example 1 true",
        "remove broker.id",
        "set process.roles=broker",
        "deprovision ctl1.example 3000 ",  # no cluster id to format with
    ]


@pytest.mark.parametrize(
    ("templates", "says"),
    [(Templates(broker="ssh {host} restart"), "needs --controller-command as well"),
     (Templates(broker="ssh {hostname}", controller="x"),
      r"--broker-command: unknown placeholder \{hostname\}")],
)  # fmt: skip
def test_bad_templates_are_refused_before_anything_runs(templates: Templates, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        _operator(templates)


def test_a_failing_command_says_how_to_resume(tmp_path: Path) -> None:
    failing = Templates(broker="echo 'disk full' >&2; exit 3", controller="true")
    with pytest.raises(CommandFailedError, match="exited 3: disk full; fix it, then run "
                       "the same `kmigrate kraft` command again"):  # fmt: skip
        _operator(failing).restart_broker(1, ConfigChange(), quick_stop=False)
