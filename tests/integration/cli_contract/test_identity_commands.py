"""Bad input to `quotas`, `users`, `plan new --principal-map` and `reassign plan
--balance`: refused before anything is contacted or written (see harness.py)."""

from __future__ import annotations

from tests.integration.cli_contract.harness import case, run_cases

PAIR = ("--source", "source", "--target", "target")
BAD_MAP = "principals:\n  - from: alice\n    to: 'User:b'\n"

IDENTITY = [
    case("quotas", "copy", "--source", "source", "--target", "source", exit=2,
         says="--source and --target are both 'source'"),
    case("quotas", "compare", "--source", "source", "--target", "nope", exit=2,
         says="nope"),
    case("quotas", "copy", *PAIR, "--principal-map", "missing.yaml", exit=4,
         says="--principal-map missing.yaml does not exist"),
    case("quotas", "compare", *PAIR, "--principal-map", "map.yaml", exit=2,
         says="'alice' is not a principal", files={"map.yaml": BAD_MAP}),
    case("quotas", "list", exit=2, says="Missing option '--cluster'"),
    case("users", "copy", *PAIR, "--passwords", "pw", exit=2,
         says="pw line 1: give user=password", files={"pw": "alice\n"}),
    case("users", "copy", *PAIR, "--passwords", "missing", exit=4,
         says="--passwords missing does not exist"),
    case("users", "copy", *PAIR, "--passwords", "pw", exit=2, says="--passwords pw",
         files={"pw": b"\x00\x01alice=\xff\xfe"}),
    case("users", "copy", "--source", "source", "--target", "source", "--passwords", "pw",
         exit=2, says="both 'source'", files={"pw": "alice=x\n"}),
    case("users", "copy", *PAIR, exit=2, says="Missing option '--passwords'"),
    case("plan", "new", *PAIR, "--topics", "t", "--principal-map", "map.yaml", "-o",
         "plan.yaml", exit=2, says="'alice' is not a principal", files={"map.yaml": BAD_MAP}),
    case("reassign", "plan", "--cluster", "source", "--rebalance", "--balance", "sideways",
         "-o", "p.json", exit=2, says="--balance"),
]  # fmt: skip

test_identity = run_cases(IDENTITY)
