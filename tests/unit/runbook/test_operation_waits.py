"""A phased operation's waits (ZooKeeper move, KRaft conversion) say what holds them."""

from __future__ import annotations

from typing import cast

import pytest

from kmigrate.errors import KafkaOperationError
from kmigrate.runbook.operation import Kind, Operation
from kmigrate.store import Store

KIND = Kind("kraft", "kraft", "KRaft migration", "the KRaft migration of '{cluster}'",
            "migration", "run the same `kmigrate kraft` command again to resume")  # fmt: skip


def _operation() -> Operation:
    return Operation(KIND, cast(Store, None), "legacy")  # a wait never touches the store


def test_a_wait_that_runs_out_names_the_problem_last_seen() -> None:
    with pytest.raises(KafkaOperationError) as raised:
        _operation().wait_clear(lambda: "1 under-replicated partition(s), e.g. kept-0[1]",
                                "no under-replicated partitions", timeout_s=-1)  # fmt: skip
    assert raised.value.message == (
        "waited -1s for no under-replicated partitions (last seen: 1 under-replicated "
        "partition(s), e.g. kept-0[1]); run the same `kmigrate kraft` command again to resume"
    )


def test_the_status_lines_say_the_problem_until_it_clears() -> None:
    problems = iter(["broker 2 is down", "broker 2 in migration mode", None])
    said: list[str] = []
    _operation().wait_clear(lambda: next(problems), "every broker in sync", 60, said.append)
    assert [line.split(": ", 1)[1] for line in said] == [
        "broker 2 is down",
        "broker 2 in migration mode",
    ]


def test_a_plain_wait_still_says_only_what_it_waits_for() -> None:
    answers = iter([False, True])
    said: list[str] = []
    _operation().wait(lambda: next(answers), "controller 3000 back", 60, said.append)
    assert said == ["waiting for controller 3000 back (0s of 60s)"]
