"""The kill-point planner: which lines are step boundaries, the seeded choice of a test's
kill point, a chain that kills at every boundary once; and the runner killing a real
process there."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from harness.killpoints import Chain, Kill, KillPoint, boundary, choose, matches
from harness.killrun import chain_run, kill_at_point


def test_progress_lines_are_boundaries_with_their_details_dropped() -> None:
    assert boundary("> phase roll1\n") == "phase roll1"
    assert boundary("> roll1: broker 2 (migration mode)") == "roll1: broker 2"
    assert boundary("> dual-write: metadata migrated (controller 3000, KRaft offset 77)") == (
        "dual-write: metadata migrated"
    )
    assert boundary("> taking over the migration's lock: pid 4242 (`kmigrate kraft migrate`) "
                    "had died") == "taking over the migration's lock: pid N"  # fmt: skip
    assert boundary("> asked process 4242 to stop after its current batch") == (
        "asked process N to stop after its current batch"
    )
    assert boundary("> moving 2 partition(s): t[0], t[1]") == "moving 2 partition(s): t[0], t[1]"
    assert boundary("> fenced writes of t[0]; waiting for every gateway instance") == (
        "fenced writes of t[0]; waiting for every gateway instance"
    )


def test_status_lines_and_other_output_are_not_boundaries() -> None:
    assert boundary("> waiting for broker 2 back in kraft mode (31s of 180s)") is None
    assert boundary("> 3/8 partitions moved, 2 moving") is None
    assert boundary("> reading the metadata again: group g is gone") is None
    assert boundary("Traceback (most recent call last):") is None
    assert boundary("error: the plan was made for another cluster") is None
    assert boundary(">") is None


def test_a_tests_kill_point_is_replayable_from_its_seed() -> None:
    marks = ["roll1: restarting broker 1", "roll1: broker 1", "roll1: restarting broker 2"]
    points = [choose(random.Random(7), marks, 8.0) for _ in range(3)]
    assert points[0] == points[1] == points[2]
    drawn = {choose(random.Random(seed), marks, 8.0) for seed in range(200)}
    assert {p.after for p in drawn} == set(marks)
    assert any(p.delay_s == 0 for p in drawn) and any(p.delay_s > 0 for p in drawn)
    assert all(0 <= p.delay_s <= 8.0 for p in drawn)
    assert all(choose(random.Random(s), marks, 0.0).delay_s == 0 for s in range(50))
    assert matches(KillPoint("roll1: broker 1"), "> roll1: broker 1 (migration mode)")
    assert not matches(KillPoint("roll1: broker 1"), "> roll2: broker 1 (kraft mode)")


def _run(chain: Chain, lines: list[str], finishes: bool) -> Kill:
    """A run printing ``lines`` (boundary kills only): where the chain kills it."""
    point = chain.next_point()
    last = None
    for line in lines:
        at = chain.kill_here(line)
        last = boundary(line) or last
        if at is not None:
            kill = Kill(point, at, at, 0.0)
            chain.record(kill)
            return kill
    kill = Kill(point, None, last, 0.0, exit_code=0 if finishes else None)
    chain.record(kill)
    return kill


def test_a_chain_kills_each_boundary_once_until_a_run_finishes() -> None:
    chain = Chain(seed=1)
    full = ["> phase a", "> a: one", "> a: two", "> phase b", "> b: one"]
    killed = []
    done_upto = 0
    while not chain.finished:
        # a rerun prints the current phase again, then the steps not done yet
        rerun = [line for line in full[done_upto:]]
        phase = next((line for line in reversed(full[:done_upto]) if "phase" in line), None)
        kill = _run(chain, ([phase] if phase else []) + rerun, finishes=True)
        killed.append(kill.at)
        if kill.at is not None:
            done_upto = full.index(f"> {kill.at}") + 1
    assert killed == ["phase a", "a: one", "a: two", "phase b", "b: one", None]
    assert chain.visited == ["phase a", "a: one", "a: two", "phase b", "b: one"]


def test_a_chains_inside_kills_follow_boundary_kills_and_the_seed() -> None:
    one, two = Chain(seed=42, inside=2, span_s=5.0), Chain(seed=42, inside=2, span_s=5.0)
    points = []
    for chain in (one, two):
        got = []
        # boundary, inside (preempted by a boundary), inside, boundary, inside, then boundaries
        preempted = iter([False, True, False, False, False, False, False])
        for _ in range(7):
            point = chain.next_point()
            got.append(point)
            at = None if point.delay_s and not next(preempted) else "x"
            if not point.delay_s:
                next(preempted)
            chain.record(Kill(point, at, None, point.delay_s))
        points.append(got)
    assert points[0] == points[1]
    assert [p.delay_s > 0 for p in points[0]] == [False, True, True, False, True, False, False]
    assert points[0][1] == points[0][2], "a preempted inside kill is tried again"
    assert all(0.2 <= p.delay_s <= 5.0 for p in points[0] if p.delay_s)
    assert Chain(seed=43, inside=2, span_s=5.0)._delays != one._delays


def test_the_runner_kills_a_command_at_its_boundary_or_inside_the_next_step(
    tmp_path: Path,
) -> None:
    script = (
        "import sys, time\n"
        "for line in ['> phase a', '> a: one (done)', '> phase b']:\n"
        "    print(line, file=sys.stderr, flush=True); time.sleep(0.3)\n"
        "time.sleep(30)\n"
    )
    argv = [sys.executable, "-c", script]
    at = kill_at_point(argv, tmp_path / "log", KillPoint("a: one"))
    assert (at.at, at.exit_code) == ("a: one", None)
    inside = kill_at_point(argv, tmp_path / "log", KillPoint("phase b", 0.5))
    assert inside.at is None and inside.last == "phase b" and inside.elapsed_s >= 0.5
    chain = Chain(seed=5)
    first, second = (
        chain_run(argv, tmp_path / "log", chain),
        chain_run(argv, tmp_path / "log", chain),
    )
    assert (first.at, second.at) == ("phase a", "a: one")
    assert "> a: one (done)" in (tmp_path / "log").read_text()


def test_an_inside_kill_lets_a_run_into_the_phase_it_resumes_in_and_counts_as_inside(
    tmp_path: Path,
) -> None:
    """Every boundary already killed at: a resumed run prints its phase at once, and a
    delay longer than that phase still ends inside it, at the next phase line, as an
    inside kill (a chain counted it as a boundary kill and drew the same delay again,
    for ever: seen with three KRaft controllers)."""
    script = (
        "import sys, time\n"
        "print('> phase controllers', file=sys.stderr, flush=True); time.sleep(0.5)\n"
        "print('> phase roll1', file=sys.stderr, flush=True); time.sleep(30)\n"
    )
    argv = [sys.executable, "-c", script]
    chain = Chain(seed=5, inside=1, span_s=5.0)
    chain.visited += ["phase controllers", "phase roll1"]
    chain.record(Kill(KillPoint(None), "phase roll1", "phase roll1", 0.0))
    point = chain.next_point()
    assert point.after is None and point.delay_s > 0.5
    kill = chain_run(argv, tmp_path / "log", chain)
    assert (kill.at, kill.last, kill.exit_code) == (None, "phase controllers", None)
    assert chain.next_point() == KillPoint(None), "the seed's one inside kill is spent"
