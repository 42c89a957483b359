"""The build's ceiling on module size: fails on a module of ``src/`` over 500 lines,
naming it and its size, and lists those over 400 (the next to split).

    python -m tools.module_sizes [ROOT]

A module that long does more than one job; split it by concept (STYLE.md) before it
lands. Exit 1 when a module is over the ceiling, 0 otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

CEILING = 500
WATCH = 400


def sizes(root: Path) -> list[tuple[int, Path]]:
    """(lines, path) of every Python module under ``root``, longest first."""
    found = [(len(p.read_text().splitlines()), p) for p in sorted(root.rglob("*.py"))]
    return sorted(found, key=lambda item: (-item[0], str(item[1])))


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path("src")
    measured = sizes(root)
    over = [(n, p) for n, p in measured if n > CEILING]
    near = [(n, p) for n, p in measured if WATCH < n <= CEILING]
    for n, p in near:
        print(f"module size: {p} has {n} lines (over {WATCH}: the next to split)")
    for n, p in over:
        print(f"module size: {p} has {n} lines, over the ceiling of {CEILING}; split it")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
