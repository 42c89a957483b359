"""`make lint`'s ceiling on module size: a module of 501 lines fails the build, naming
it and its size; 500 passes; one over 400 is listed as the next to split."""

from __future__ import annotations

from pathlib import Path

import pytest
from tools import module_sizes


def _module(root: Path, name: str, lines: int) -> Path:
    path = root / "pkg" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x = 1\n" * lines)
    return path


def test_a_module_over_500_lines_fails_and_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = _module(tmp_path, "big.py", 501)
    _module(tmp_path, "fine.py", 500)
    assert module_sizes.main([str(tmp_path)]) == 1
    said = capsys.readouterr().out
    assert f"{big} has 501 lines, over the ceiling of 500" in said
    assert "fine.py has 500 lines (over 400" in said


def test_modules_at_the_ceiling_pass_and_those_over_400_are_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _module(tmp_path, "near.py", 401)
    _module(tmp_path, "small.py", 400)
    assert module_sizes.main([str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert "near.py has 401 lines" in said and "small.py" not in said


def test_the_tree_is_under_the_ceiling() -> None:
    root = Path(__file__).resolve().parents[2] / "src"
    over = [(n, p) for n, p in module_sizes.sizes(root) if n > module_sizes.CEILING]
    assert not over, over
