"""Bad input to `quotas`, `users`, `schemas`, `plan new --principal-map` and `reassign
plan --balance`: refused before anything is contacted or written (see harness.py)."""

from __future__ import annotations

from tests.integration.cli_contract.harness import CONFIG, SECRETS, case, run_cases

PAIR = ("--source", "source", "--target", "target")
BAD_MAP = "principals:\n  - from: alice\n    to: 'User:b'\n"


def with_registry(registry: str) -> str:
    """The contract's config with ``registry`` (YAML flow text) on the source cluster."""
    return CONFIG.replace(
        "    timeout_s: 2\n", f"    timeout_s: 2\n    schema_registry: {registry}\n", 1
    )


REGISTRY = "{url: 'http://127.0.0.1:1', timeout_s: 1}"

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
    case("schemas", "list", "--cluster", "target", exit=2,
         says="cluster 'target' names no schema_registry"),
    case("schemas", "copy", "--source", "source", "--target", "source", exit=2,
         says="--source and --target are both 'source'"),
    case("schemas", "compare", *PAIR, exit=2, says="names no schema_registry",
         config=with_registry(REGISTRY)),
    case("schemas", "list", "--cluster", "source", exit=3,
         says="cannot reach the schema registry of cluster 'source' (http://127.0.0.1:1)",
         config=with_registry(REGISTRY)),
    case("schemas", "list", "--cluster", "source", exit=2,
         says="schema_registry.url: value error, must be an http:// or https://",
         config=with_registry("{url: 'ftp://registry'}")),
    case("schemas", "list", "--cluster", "source", exit=2,
         says="schema_registry.basic_auth_user_info: value error, must be user:password",
         config=with_registry(f"{{url: 'http://r', basic_auth_user_info: {SECRETS[1]}}}")),
    case("schemas", "list", "--cluster", "source", exit=2,
         says="schema_registry.ca_file missing.pem does not exist",
         config=with_registry("{url: 'https://r', ca_file: missing.pem}")),
    case("reassign", "plan", "--cluster", "source", "--rebalance", "--balance", "sideways",
         "-o", "p.json", exit=2, says="--balance"),
]  # fmt: skip

test_identity = run_cases(IDENTITY)
