"""The operator's command templates for real hosts: checked before anything runs, values
shell-quoted, a failing command one line naming which and why."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from kmigrate.ensemble_move.commands import CommandOperator, Templates
from kmigrate.ensemble_move.members import parse_member
from kmigrate.errors import CommandFailedError, ConfigError

SERVERS = [
    parse_member("server.1=zk1.old:2888:3888:participant;zk1.old:2181"),
    parse_member("server.4=zk1.new:2888:3888:participant;zk1.new:2181"),
]


def _recorder(tmp_path: Path) -> Templates:
    log = shlex.quote(str(tmp_path / "ran.log"))
    return Templates(
        restart_broker=f"echo restart {{host}} {{broker}} {{zookeeper_connect}} >> {log}",
        stop_server=f"echo stop {{host}} {{id}} >> {log}",
        start_server=f"echo start {{host}} {{id}} {{fresh}} >> {log}; "
        f"cat {{dynamic_file}} >> {log}",
    )


def _operator(templates: Templates) -> CommandOperator:
    return CommandOperator(templates, SERVERS, {1: "kafka1.example"}, lambda _m: None)


def test_each_template_runs_with_its_values(tmp_path: Path) -> None:
    operator = _operator(_recorder(tmp_path))
    operator.stop_server(4)
    operator.start_server(4, [1, 4], fresh=True)
    operator.restart_broker(1, "zk1.new:2181/kafka")
    assert (tmp_path / "ran.log").read_text().splitlines() == [
        "stop zk1.new 4",
        "start zk1.new 4 true",
        "server.1=zk1.old:2888:3888:participant;zk1.old:2181",
        "server.4=zk1.new:2888:3888:participant;zk1.new:2181",
        "restart kafka1.example 1 zk1.new:2181/kafka",
    ]


def test_a_broker_whose_restart_was_interrupted_restarts_only_if_unregistered(
    tmp_path: Path,
) -> None:
    assert not _operator(_recorder(tmp_path)).recover_broker(1, "x:1/kafka", registered=True)
    assert not (tmp_path / "ran.log").exists()
    assert _operator(_recorder(tmp_path)).recover_broker(1, "x:1/kafka", registered=False)
    assert (tmp_path / "ran.log").read_text() == "restart kafka1.example 1 x:1/kafka\n"


def test_values_are_shell_quoted(tmp_path: Path) -> None:
    out = tmp_path / "argv"
    templates = _recorder(tmp_path)
    operator = _operator(
        Templates(
            f"printf '%s|' {{zookeeper_connect}} > {out}",
            templates.stop_server,
            templates.start_server,
        )
    )
    operator.restart_broker(1, "a:1;touch pwned")
    assert out.read_text() == "a:1;touch pwned|"
    assert not Path("pwned").exists()


@pytest.mark.parametrize(
    ("templates", "says"),
    [
        (Templates("ssh {host} restart", "stop {id}"), "needs --zk-start-command as well"),
        (
            Templates("ssh {hostname}", "x", "y"),
            r"--restart-command: unknown placeholder \{hostname\}",
        ),
        (Templates("x", "y {id", "z"), "--zk-stop-command: .*literal brace"),
    ],
)
def test_bad_templates_are_refused_before_anything_runs(templates: Templates, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        _operator(templates)


def test_a_failing_command_is_one_line_naming_it_and_its_last_words(tmp_path: Path) -> None:
    failing = Templates("echo checking >&2; echo 'no route to host' >&2; exit 255", "true", "true")
    with pytest.raises(CommandFailedError) as failed:
        _operator(failing).restart_broker(1, "x:1")
    assert str(failed.value) == (
        "--restart-command to restart broker 1 exited 255: no route to host; fix it, then run "
        "`kmigrate zk migrate` again"
    )
