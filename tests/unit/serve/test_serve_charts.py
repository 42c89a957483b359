"""The console's small charts (pure): every point inside the box, newest at the right,
a gap where the value was unknown, nothing older than the hour."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from kmigrate.serve.charts import HEIGHT, WIDTH, line

NOW = 10_000_000


def _coords(path: str) -> list[tuple[str, float, float]]:
    return [
        (m[0], float(m[1]), float(m[2])) for m in re.findall(r"([ML])(-?[\d.]+),(-?[\d.]+)", path)
    ]


@given(st.lists(st.tuples(st.integers(0, 3_600_000), st.one_of(st.none(), st.floats(0, 1e9)))))
def test_every_point_is_inside_the_box(points: list[tuple[int, float | None]]) -> None:
    ordered = sorted(points, key=lambda p: -p[0])  # oldest first
    chart = line([(NOW - age, v) for age, v in ordered], NOW)
    for _, x, y in _coords(chart.path):
        assert 0 <= x <= WIDTH and 0 <= y <= HEIGHT
    known = [v for _, v in ordered if v is not None]
    assert chart.last == (known[-1] if known else None)


def test_an_unknown_value_breaks_the_line_and_old_points_are_left_out() -> None:
    chart = line(
        [(NOW - 7_200_000, 5.0), (NOW - 60_000, 10.0), (NOW - 30_000, None), (NOW, 20.0)], NOW
    )
    moves = _coords(chart.path)
    assert [m for m, _, _ in moves] == ["M", "M"]  # two pieces, no line across the gap
    assert moves[-1][1] == WIDTH and chart.top == 20.0 and chart.last == 20.0
    assert moves[-1][2] < moves[0][2]  # the larger value is drawn higher


def test_nothing_known_draws_nothing() -> None:
    assert line([], NOW).path == "" and line([(NOW, None)], NOW).last is None
