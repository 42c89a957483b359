"""Bad input to `kmigrate` itself and to `clusters`/`topics`: see harness.py."""

from __future__ import annotations

from tests.integration.cli_contract.harness import case, run_cases

CASES = [
    case("topics", "list", exit=2, says="Missing option '--cluster'"),
    case("topics", "list", "--cluster", "nope", exit=2, says="unknown cluster 'nope'"),
    case(
        "topics",
        "list",
        "--cluster",
        "source",
        "--config",
        "missing.yaml",
        exit=2,
        says="missing.yaml",
    ),
    case("nosuch", exit=2, says="No such command"),
]

test_bad_input = run_cases(CASES)
