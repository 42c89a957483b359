"""kio loads without hypothesis in a process that had not imported it, and hypothesis
stays importable (a fresh interpreter each: the test process has hypothesis loaded)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_byte_copy_and_the_gateway_load_kio_without_hypothesis() -> None:
    out = _run(
        "import sys, kmigrate.mirror.byte_copy, kmigrate.gateway.serving.produce\n"
        "print('hypothesis' in sys.modules, 'kio.static._phantom' in sys.modules)"
    )
    assert out == "False True"


def test_hypothesis_is_still_importable_after_kio() -> None:
    out = _run(
        "import kmigrate.mirror.byte_copy\n"
        "from hypothesis import strategies\n"
        "print(strategies.integers().example() is not None)"
    )
    assert out.endswith("True")


@pytest.mark.parametrize("first", ["hypothesis", "kio.schema.errors"])
def test_whichever_comes_first_both_work(first: str) -> None:
    """With hypothesis loaded first, kio registers its strategies as it always did."""
    other = "kio.schema.errors" if first == "hypothesis" else "hypothesis.strategies"
    out = _run(f"import kmigrate, {first}, {other}\nprint('ok')")
    assert out == "ok"
