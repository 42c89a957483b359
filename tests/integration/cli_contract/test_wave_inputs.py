"""Bad input to the wave options of `plan new` and `migrate` (see harness.py): refused
before a cluster is contacted (nothing answers at the configured addresses: a command
that tried would exit 3), the folder left as it was."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator

import pytest

from tests.integration.cli_contract.harness import case, run_cases


@pytest.fixture(autouse=True, scope="module")
def _imported_elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Import the commands in a scratch folder (hypothesis, imported by the gateway's
    protocol library, writes ./.hypothesis on first import)."""
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("imports"))
    try:
        for module in ("plan", "migrate"):
            importlib.import_module(f"kmigrate.cli.{module}")
    finally:
        os.chdir(cwd)
    yield


PLAN = """\
name: m
source: source
target: target
topics:
  - {name: a, partitions: 1}
  - {name: b, partitions: 1}
  - {name: c, partitions: 1}
groups:
  - {name: g, topics: [a, b]}
"""
WAVES = """\
waves:
  - {number: 1, topics: [c]}
  - {number: 2, topics: [a, b], groups: [g]}
"""
NEW = ("plan", "new", "--source", "source", "--target", "target", "--topics", "orders")

CASES = [
    case(*NEW, "--wave-bytes", "0", "-o", "p.yaml", exit=2, says="'0' is not a size"),
    case(*NEW, "--wave-bytes", "lots", "-o", "p.yaml", exit=2, says="'lots' is not a size"),
    case(*NEW, "--wave-duration", "soon", "-o", "p.yaml", exit=2,
         says="'soon' is not a duration"),
    case(*NEW, "--mirror-rate", "0", "-o", "p.yaml", exit=2, says="'--mirror-rate'"),
    case(*NEW, "--wave-bytes", "1x", "-o", "p.yaml", "--json", exit=2, says="not a size"),
    case("migrate", "promote", "--topics", "a", "--wave", "1", exit=2,
         says="give --topics REGEX or --wave N, not both"),
    case("migrate", "promote", "--wave", "0", exit=2, says="'--wave'"),
    case("migrate", "promote", exit=2, says="Missing option '--topics' (or --wave N)"),
    case("migrate", "retire", "--wave", "two", "--yes", exit=2, says="'--wave'"),
    case("migrate", "rollback", "a", "--wave", "1", "--yes", exit=2,
         says="give --topics REGEX or --wave N, not both"),
    case("migrate", "consumers", "--groups", "g", "--wave", "2", exit=2,
         says="give --groups REGEX or --wave N, not both"),
    case("migrate", "consumers", "--wave", "2", "--json", "--groups", "g", exit=2,
         says="not both"),
    case("migrate", "start", "plan.yaml", "--wave", "0", exit=2, says="'--wave'",
         files={"plan.yaml": PLAN + WAVES}),
    case("migrate", "start", "plan.yaml", "--wave", "1", exit=4,
         says="plan.yaml has no waves (its plan fits in one)", files={"plan.yaml": PLAN}),
    case("migrate", "start", "plan.yaml", "--wave", "3", exit=4,
         says="plan.yaml has no wave 3 (its waves: 1-2)", files={"plan.yaml": PLAN + WAVES}),
    case("migrate", "start", "plan.yaml", "--wave", "1", exit=2,
         says="group g reads topics of waves 1 and 2",
         files={"plan.yaml": PLAN + WAVES.replace("[c]", "[c, a]").replace("[a, b]", "[b]")}),
    # reads the (absent) store, contacts no cluster, creates nothing
    case("migrate", "promote", "--wave", "1", exit=4, says="no migration yet"),
]  # fmt: skip

test_wave_input = run_cases(CASES)
