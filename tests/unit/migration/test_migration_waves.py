"""Waves for big estates: the pure planner, the plan file's waves, selecting a wave and
each wave's estimates. No broker."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kmigrate.cli import render
from kmigrate.cli.plan import show_check, show_waves
from kmigrate.errors import ConfigError, NotFoundError
from kmigrate.migration.check import CheckReport, TopicEstimate, wave_estimates
from kmigrate.migration.plan import (
    Plan,
    PlannedGroup,
    PlannedTopic,
    PlannedWave,
    WaveSizing,
    parse_plan,
)
from kmigrate.migration.selection import in_wave
from kmigrate.migration.waves import (
    Bounds,
    TopicSize,
    Wave,
    parse_size,
    plan_waves,
    size_text,
    span_text,
)

# --- the planner, by its properties ------------------------------------------------------


@st.composite
def estates(draw: st.DrawFn) -> tuple[list[TopicSize], dict[str, list[str]], Bounds]:
    pairs = draw(
        st.lists(st.tuples(st.integers(0, 100), st.integers(0, 100)), min_size=1, max_size=30)
    )
    names = [f"t{i:02d}" for i in range(len(pairs))]
    sizes = [TopicSize(n, b, r) for n, (b, r) in zip(names, pairs, strict=True)]
    reads = draw(st.lists(st.lists(st.sampled_from(names), min_size=1, max_size=4), max_size=10))
    groups = {f"g{i}": read for i, read in enumerate(reads)}
    bounds = Bounds(draw(st.integers(1, 300)), draw(st.floats(0.5, 300)), draw(st.floats(0.5, 10)))
    return sizes, groups, bounds


Estate = tuple[list[TopicSize], dict[str, list[str]], Bounds]


def _component_of(topic: str, groups: dict[str, list[str]]) -> set[str]:
    """Topics reachable from ``topic`` through groups that read them together (BFS: an
    independent check of the planner's union-find)."""
    seen, todo = {topic}, [topic]
    while todo:
        current = todo.pop()
        for read in groups.values():
            if current in read:
                for other in set(read) - seen:
                    seen.add(other)
                    todo.append(other)
    return seen


@settings(max_examples=200, deadline=None)
@given(estates())
def test_the_planners_guarantees(estate: Estate) -> None:
    sizes, groups, bounds = estate
    waves = plan_waves(sizes, groups, bounds)
    _every_topic_in_exactly_one_wave(sizes, waves)
    _a_groups_topics_never_split(groups, waves)
    _within_bounds_unless_one_component_exceeds_them(groups, bounds, waves)


def _every_topic_in_exactly_one_wave(sizes: list[TopicSize], waves: list[Wave]) -> None:
    placed = [t for w in waves for t in w.topics]
    assert sorted(placed) == sorted(s.name for s in sizes)
    assert [w.number for w in waves] == list(range(1, len(waves) + 1))
    by_name = {s.name: s for s in sizes}
    for w in waves:
        assert w.bytes == sum(by_name[t].bytes for t in w.topics)
        assert w.records == sum(by_name[t].records for t in w.topics)


def _a_groups_topics_never_split(groups: dict[str, list[str]], waves: list[Wave]) -> None:
    wave_of = {t: w.number for w in waves for t in w.topics}
    for group, read in groups.items():
        (number,) = {wave_of[t] for t in read}
        assert [w.number for w in waves if group in w.groups] == [number]


def _within_bounds_unless_one_component_exceeds_them(
    groups: dict[str, list[str]], bounds: Bounds, waves: list[Wave]
) -> None:
    for w in waves:
        fits = w.bytes <= bounds.max_bytes and w.seconds <= bounds.max_seconds
        if w.over_bounds is None:
            assert fits
        else:
            assert not fits
            assert set(w.topics) == _component_of(w.topics[0], groups)
            assert w.over_bounds.endswith(("never split", "moves whole"))
    over = [w.over_bounds is not None for w in waves]
    assert over == sorted(over)  # the waves over the bounds come last


@settings(max_examples=100, deadline=None)
@given(estates(), st.randoms(use_true_random=False))
def test_the_same_estate_in_any_order_gives_the_same_waves(estate: Estate, rng: object) -> None:
    sizes, groups, bounds = estate
    shuffled_sizes = list(sizes)
    rng.shuffle(shuffled_sizes)  # type: ignore[attr-defined]
    items = list(groups.items())
    rng.shuffle(items)  # type: ignore[attr-defined]
    shuffled_groups = {g: list(reversed(read)) for g, read in items}
    assert plan_waves(shuffled_sizes, shuffled_groups, bounds) == plan_waves(sizes, groups, bounds)


# --- the planner, by example --------------------------------------------------------------

GB = 1024**3


def test_pairs_read_together_pack_into_waves_smallest_first() -> None:
    sizes = [TopicSize(f"t{i:02d}", (i + 1) * GB, 0) for i in range(8)]
    groups = {"ga": ["t00", "t01"], "gb": ["t02", "t03"], "gc": ["t04", "t05"]}
    waves = plan_waves(sizes, groups, Bounds(15 * GB, 3600, 1000))
    # components (GB): t04+t05=11, t07=8, t02+t03=7, t06=7, t00+t01=3; first fit
    # decreasing at 15 GB: [11, 3], [8, 7], [7]; then the smallest wave first
    assert [(w.topics, w.groups, w.bytes // GB) for w in waves] == [
        (("t06",), (), 7),
        (("t00", "t01", "t04", "t05"), ("ga", "gc"), 14),
        (("t02", "t03", "t07"), ("gb",), 15),
    ]


def test_a_component_over_the_bounds_is_its_own_wave_and_says_why() -> None:
    sizes = [TopicSize("a", 40 * GB, 0), TopicSize("b", 30 * GB, 0), TopicSize("c", GB, 0)]
    waves = plan_waves(sizes, {"billing": ["a", "b"]}, Bounds(50 * GB, 3600, 1000))
    assert [w.topics for w in waves] == [("c",), ("a", "b")]
    assert waves[0].over_bounds is None
    assert waves[1].over_bounds == (
        "2 topics read together by group billing hold 70 GB, more than one wave's 50 GB; "
        "a group's topics are never split"
    )


def test_the_copy_time_bounds_a_wave_too() -> None:
    sizes = [TopicSize("a", 1, 5_000), TopicSize("b", 1, 5_000), TopicSize("c", 1, 30_000)]
    waves = plan_waves(sizes, {}, Bounds(GB, 15, 1000))  # 15 s at 1,000 records/s
    assert [(w.topics, w.seconds) for w in waves] == [(("a", "b"), 10.0), (("c",), 30.0)]
    assert waves[1].over_bounds == (
        "topic c alone takes ~30s to copy, longer than one wave's 15s; a topic moves whole"
    )


def test_one_wave_when_everything_fits() -> None:
    waves = plan_waves(
        [TopicSize("a", 5, 5), TopicSize("b", 5, 5)], {"g": ["a"]}, Bounds(99, 99, 1)
    )
    assert waves == [Wave(1, ("a", "b"), ("g",), 10, 10, 10.0)]


@pytest.mark.parametrize(
    ("text", "size"),
    [("50GB", 50 * GB), ("512mb", 512 * 1024**2), ("1.5TB", int(1.5 * 1024**4)), ("4096", 4096),
     ("3KB", 3072), ("0", None), ("-1GB", None), ("lots", None), ("nanGB", None), ("", None)],
)  # fmt: skip
def test_sizes_as_users_write_them(text: str, size: int | None) -> None:
    assert parse_size(text) == size


def test_sizes_and_spans_as_people_read_them() -> None:
    assert [size_text(n) for n in (0, 512, 3 * 1024**2 + 1024**2 // 5, 50 * GB)] == [
        "0 B",
        "512 B",
        "3.2 MB",
        "50 GB",
    ]
    assert [span_text(s) for s in (45, 720, 7500)] == ["45s", "12m", "2h05m"]


# --- the plan file ------------------------------------------------------------------------


def _plan(waves: list[PlannedWave] | None = None) -> Plan:
    return Plan(
        name="m1",
        source="a",
        target="b",
        topics=[PlannedTopic(name=n, partitions=1) for n in ("t1", "t2", "t3")],
        groups=[PlannedGroup(name="g", topics=["t1", "t2"])],
        waves=waves or [],
    )


WAVES = [
    PlannedWave(number=1, topics=["t3"], bytes=10, records=2, copy_s=0.1),
    PlannedWave(number=2, topics=["t1", "t2"], groups=["g"], bytes=99, records=9, copy_s=1.5),
]


@pytest.mark.parametrize("waves", [None, WAVES], ids=["without waves", "with waves"])
def test_a_plan_reads_back_equal_with_or_without_waves(waves: list[PlannedWave] | None) -> None:
    plan = _plan(waves)
    assert parse_plan(plan.to_yaml("p.yaml"), "p.yaml") == plan


def test_a_plan_written_before_waves_still_loads() -> None:
    old = "name: m\nsource: a\ntarget: b\ntopics: [{name: t, partitions: 1}]\n"
    plan = parse_plan(old, "p.yaml")
    assert plan.waves == [] and plan.wave_sizing is None


def _with_waves(waves: str, groups: str = "groups: [{name: g, topics: [t1, t2]}]") -> str:
    return (
        "name: m\nsource: a\ntarget: b\n"
        "topics: [{name: t1, partitions: 1}, {name: t2, partitions: 1}, "
        "{name: t3, partitions: 1}]\n"
        f"{groups}\nwaves: {waves}\n"
    )


@pytest.mark.parametrize(
    ("waves", "fragment"),
    [
        ("[{number: 1, topics: [t1, t2], groups: [g]}, {number: 3, topics: [t3]}]",
         "waves must be numbered 1, 2, 3"),
        ("[{number: 1, topics: [t1, t2, t3, t4], groups: [g]}]",
         "wave 1 lists topic t4, which is not among the plan's topics"),
        ("[{number: 1, topics: [t1, t2], groups: [g]}]", "topic t3 is in no wave"),
        ("[{number: 1, topics: [t1, t2, t3], groups: [g]}, {number: 2, topics: [t3]}]",
         "topic t3 is in waves 1 and 2"),
        ("[{number: 1, topics: [t1, t3], groups: [g]}, {number: 2, topics: [t2]}]",
         "group g reads topics of waves 1 and 2; a group's topics move in one wave"),
        ("[{number: 1, topics: [t1, t2]}, {number: 2, topics: [t3]}]",
         "group g reads wave 1's topics; list it there"),
        ("[{number: 1, topics: [t1, t2], groups: [g]}, {number: 2, topics: [t3], groups: [g]}]",
         "group g reads wave 1's topics; list it there (and in no other wave)"),
        ("[{number: 1, topics: [t1, t2], groups: [g, h]}, {number: 2, topics: [t3]}]",
         "wave 1 lists group h, which is not among the plan's groups"),
        ("[{number: 1, topics: []}]", "waves.0.topics"),
        ("[{number: 1, topics: [t1, t2, t3], groups: [g], bytes: -1}]", "waves.0.bytes"),
    ],
)  # fmt: skip
def test_waves_that_do_not_fit_the_plan_are_one_line_naming_what_to_fix(
    waves: str, fragment: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_plan(_with_waves(waves), "p.yaml")
    assert fragment in info.value.message
    assert "\n" not in info.value.message


def test_a_wave_selects_its_topics_and_groups() -> None:
    plan = _plan(WAVES)
    assert in_wave(plan, "topic", 2, "plan p.yaml") == ["t1", "t2"]
    assert in_wave(plan, "group", 2, "plan p.yaml") == ["g"]
    with pytest.raises(NotFoundError, match=r"wave 1 of plan p.yaml has no groups"):
        in_wave(plan, "group", 1, "plan p.yaml")
    with pytest.raises(NotFoundError, match=r"plan p.yaml has no wave 3 \(its waves: 1-2\)"):
        in_wave(plan, "topic", 3, "plan p.yaml")
    with pytest.raises(NotFoundError, match="has no waves"):
        in_wave(_plan(), "topic", 1, "plan p.yaml")


# --- each wave's time ---------------------------------------------------------------------


def test_each_waves_catch_up_leaves_the_earlier_waves_their_producers_rate() -> None:
    estimates = [
        TopicEstimate("t3", 1_000, 100.0, None),
        TopicEstimate("t1", 8_000, 300.0, None),
        TopicEstimate("t2", 1_000, 100.0, None),
    ]
    (first, second) = wave_estimates(_plan(WAVES), estimates, 1_000.0)
    assert (first.wave, first.backlog, first.copy_s, first.catch_up_s) == (
        1,
        1_000,
        1.0,
        1_000 / 900,
    )
    # wave 2: 9,000 records, its producers 400/s and wave 1's 100/s -> 500/s to spare
    assert (second.backlog, second.incoming_per_s, second.copy_s) == (9_000, 400.0, 9.0)
    assert second.catch_up_s == 9_000 / 500


def test_a_wave_the_producers_outpace_never_catches_up() -> None:
    estimates = [TopicEstimate("t3", 10, 600.0, None), TopicEstimate("t1", 10, 500.0, None)]
    (first, second) = wave_estimates(_plan(WAVES), estimates, 1_000.0)
    assert first.catch_up_s == 10 / 400
    assert second.catch_up_s is None and second.copy_s == 10 / 1_000


def test_plan_new_and_plan_check_show_a_row_per_wave() -> None:
    sizing = WaveSizing(
        max_bytes=50 * GB, max_copy_s=7200, mirror_rate=40_000, rate_from="assumed",
        bytes_from="log-dirs",
    )  # fmt: skip
    plan = _plan(WAVES).model_copy(update={"wave_sizing": sizing})
    estimates = [TopicEstimate("t3", 1_000, 100.0, None), TopicEstimate("t1", 9_000, 950.0, None)]
    report = CheckReport(estimates=estimates, waves=wave_estimates(plan, estimates, 1_000.0))
    with render.out.capture() as shown:
        show_waves(plan)
        show_check(report)
    text = " ".join(shown.get().split())
    assert "waves of at most 50 GB and 2h00m at 40,000 records/s (assumed)" in text
    assert "bytes from log-dirs" in text
    assert "│ 1 │ 1 │ 0 │ 1,000 │ 100/s │ ~1s │ ~1s │" in text
    assert "│ 2 │ 2 │ 1 │ 9,000 │ 950/s │ ~9s │ never │" in text
