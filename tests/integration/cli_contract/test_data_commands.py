"""Bad input to `topics`, `groups`, `mirror` and `verify` (see harness.py): refused with
README's exit code and one line, before any cluster is contacted (the few exit-3 cases
are the ones whose input is fine), and with the folder and any store byte-identical."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from kmigrate.model.links import Link, StartPosition, TopicState
from kmigrate.store import open_store
from kmigrate.store.links import put_topic, save_link
from tests.integration.cli_contract.harness import (
    PASSWORD_ENV,
    SECRETS,
    case,
    prepare,
    run_cases,
    run_in,
    snapshot,
)

LONG = "t" * 5000
START = ("mirror", "start", "--source", "source", "--target", "target")
PAIR = ("--source", "source", "--target", "target", "--topics", "orders")
CREATE = ("groups", "create", "--cluster", "source", "--group", "g", "--topics", "orders")
UNREACHABLE = "cannot reach cluster"


def _existing_store() -> bytes:
    """A store holding link `l` (source -> target) with one mirrored topic."""
    with tempfile.TemporaryDirectory() as folder:
        store = open_store("sqlite:///kmigrate.db", Path(folder))
        save_link(store, Link("l", "source", "target", "orders", StartPosition("earliest")))
        put_topic(store, "l", "orders", 3, TopicState.MIRRORING)
        store.close()
        return (Path(folder) / "kmigrate.db").read_bytes()


STORE = {"kmigrate.db": _existing_store()}
BAD_JSON = {"bad.json": "{not json", "list.json": "[1, 2]", "neg.json": '{"0": -1}'}
VERIFY_FILES = {
    "bad.json": "{not json",
    "shape.json": '{"orders": {"0": 5}}',
    "neg.json": '{"orders": {"0": {"source": -1, "target": 0}}}',
}

TOPICS = [
    case("topics", "list", "--cluster", "source", "--topics", "(", exit=2, says="is not a regex"),
    case("topics", "list", "--cluster", "source", "--bogus", exit=2, says="No such option"),
    case("topics", "describe", LONG, "--cluster", "source", exit=2, says="valid Kafka topic"),
    case("topics", "describe", "a b", "--cluster", "source", exit=2, says="valid Kafka topic"),
    case("topics", "describe", "..", "--cluster", "source", exit=2, says="valid Kafka topic"),
    case("topics", "describe", "orders", exit=2, says="Missing option '--cluster'"),
    case("topics", "describe", "--cluster", "source", exit=2, says="Missing argument"),
    case("topics", "describe", "orders", "--cluster", "nope", exit=2, says="unknown cluster"),
    case("topics", "describe", "orders", "--cluster", "target", exit=3, says=UNREACHABLE),
]

GROUPS = [
    case("groups", "list", exit=2, says="Missing option '--cluster'"),
    case("groups", "list", "--cluster", "nope", exit=2, says="unknown cluster 'nope'"),
    case("groups", "list", "--cluster", "source", "--groups", "[", exit=2, says="not a regex"),
    case("groups", "list", "--cluster", "target", exit=3, says=UNREACHABLE),
    case("groups", "describe", "no-such-group", "--cluster", "source", exit=3, says=UNREACHABLE),
    case("groups", "describe", "", "--cluster", "source", exit=2, says="not a valid Kafka group"),
    case(*CREATE, exit=2, says="Missing option '--from'"),
    case(*CREATE, "--from", "yesterday", exit=2, says="'yesterday' is not a position"),
    case(*CREATE, "--from", "-5", exit=2, says="'-5' is not a position"),
    case(*CREATE, "--from", "@-5", exit=2, says="is not a position"),
    case(*CREATE, "--from", "2026-13-45T00:00", exit=2, says="is not a position"),
    case(*CREATE, "--from", "missing.json", exit=2, says="'missing.json' does not exist"),
    case(*CREATE, "--from", "bad.json", exit=2, says="not valid JSON", files=BAD_JSON),
    case(*CREATE, "--from", "list.json", exit=2, says="must map partitions", files=BAD_JSON),
    case(*CREATE, "--from", "neg.json", exit=2, says="cannot be negative", files=BAD_JSON),
    case(*CREATE, "--at", "nowhere", exit=2, says="'nowhere' is not a position"),
    case(
        "groups",
        "create",
        "--cluster",
        "source",
        "--group",
        "g",
        "--topics",
        "(",
        "--from",
        "earliest",
        exit=2,
        says="is not a regex",
    ),
    case(
        "groups",
        "create",
        "--cluster",
        "source",
        "--group",
        "g",
        "--from",
        "earliest",
        exit=2,
        says="Missing option '--topics'",
    ),
    case(
        "groups",
        "create",
        "--cluster",
        "source",
        "--group",
        "g",
        "--topic",
        "a b",
        "--from",
        "earliest",
        exit=2,
        says="valid Kafka topic name",
    ),
    case(
        "groups",
        "create",
        "--cluster",
        "source",
        "--group",
        "g",
        "--topic",
        LONG,
        "--at",
        "earliest",
        exit=2,
        says="valid Kafka topic name",
    ),
    case(
        "groups",
        "create",
        "--cluster",
        "source",
        "--group",
        "",
        "--topics",
        "orders",
        "--from",
        "earliest",
        exit=2,
        says="not a valid Kafka group id",
    ),
    case(
        "groups",
        "create",
        "--cluster",
        "nope",
        "--group",
        "g",
        "--topics",
        "orders",
        "--from",
        "earliest",
        exit=2,
        says="unknown cluster 'nope'",
    ),
    case("groups", "migrate", "--link", "nope", "--group", "g", exit=4, says="no link named"),
    case(
        "groups",
        "migrate",
        "--link",
        "nope",
        "--group",
        "g",
        "--apply",
        exit=4,
        says="no link named",
    ),
    case(
        "groups",
        "migrate",
        "--link",
        "l",
        "--group",
        "g",
        "--timeout",
        "0",
        exit=2,
        says="not a duration",
    ),
    case(
        "groups",
        "migrate",
        "--link",
        "l",
        "--group",
        "g",
        "--timeout",
        "5x",
        exit=2,
        says="'5x' is not a duration",
    ),
    case("groups", "migrate", "--link", "l", exit=2, says="Missing option '--group'"),
    case("groups", "sync", "--link", "l", "--interval", "0.1", exit=2, says="shorter than"),
    case("groups", "sync", "--link", "l", "--groups", "(", exit=2, says="is not a regex"),
    case("groups", "sync", "--link", "l", "--max-unavailable", "-5", exit=2, says="not a duration"),
    case("groups", "sync", "--link", "nope", exit=4, says="no link named 'nope'"),
    case("groups", "translate", "--group", "g", exit=2, says="pass --link LINK"),
    case("groups", "translate", "--link", "nope", "--group", "g", exit=4, says="no link named"),
    case(
        "groups",
        "translate",
        "--by-timestamp",
        "--source",
        "source",
        "--group",
        "g",
        exit=2,
        says="both --source and --target",
    ),
    case(
        "groups",
        "translate",
        "--by-timestamp",
        "--source",
        "source",
        "--target",
        "nope",
        "--group",
        "g",
        exit=2,
        says="unknown cluster 'nope'",
    ),
]

MIRROR = [
    case(
        "mirror",
        "start",
        "--target",
        "target",
        "--topics",
        "x",
        exit=2,
        says="Missing option '--source'",
    ),
    case(
        "mirror",
        "start",
        "--source",
        "nope",
        "--target",
        "target",
        "--topics",
        "x",
        exit=2,
        says="unknown cluster 'nope'",
    ),
    case(
        "mirror",
        "start",
        "--source",
        "source",
        "--target",
        "source",
        "--topics",
        "x",
        exit=2,
        says="name the same cluster",
    ),
    case(*START, exit=2, says="Missing option '--topics'"),
    case(*START, "--topics", "(", exit=2, says="is not a regex"),
    case(*START, "--topics", "x", "--from", "nope", exit=2, says="'nope' is not a position"),
    case(*START, "--topics", "x", "--start", "nope", exit=2, says="'nope' is not a position"),
    case(*START, "--topics", "x", "--from", "@-1", exit=2, says="is not a position"),
    case(*START, "--topics", "x", "--interval", "0.1s", exit=2, says="shorter than 0.5s"),
    case(*START, "--topics", "x", "--interval", "often", exit=2, says="not a duration"),
    case(
        *START,
        "--topics",
        "x",
        "--refresh-interval",
        "abc",
        exit=2,
        says="'--refresh-interval': 'abc' is not a duration",
    ),
    case(*START, "--topics", "x", "--max-unavailable", "0", exit=2, says="not a duration"),
    case(*START, "--topics", "x", "--replication-factor", "0", exit=2, says="replication-factor"),
    case(
        *START,
        "--topics",
        "x",
        "--max-offsets-per-batch",
        "-1",
        exit=2,
        says="max-offsets-per-batch",
    ),
    case(
        *START, "--topics", "x", "--producer-property", "novalue", exit=2, says="must be KEY=VALUE"
    ),
    case(*START, "--topics", "x", "--link", "bad name!", exit=2, says="link name"),
    case(*START, "--topics", "x", exit=3, says=UNREACHABLE),
    case(*START, "--topics", "x", "--detach", exit=3, says=UNREACHABLE),
    case("mirror", "status", "--link", "nope", exit=4, says="no link named 'nope'"),
    case("mirror", "status", "--link", "nope", "--offline", exit=4, says="no link named"),
    case("mirror", "stop", "--link", "nope", exit=4, says="no link named 'nope'"),
    case("mirror", "stop", exit=2, says="pass --link LINK"),
    case("mirror", "stop", "--link", "l", "--timeout", "0", exit=2, says="not a duration"),
    case("mirror", "promote", "--link", "nope", "--topics", "x", exit=4, says="no link named"),
    case("mirror", "promote", "--link", "l", "--topics", "(", exit=2, says="is not a regex"),
    case(
        "mirror",
        "promote",
        "--link",
        "l",
        "--topics",
        "x",
        "--timeout",
        "1y",
        exit=2,
        says="not a duration",
    ),
    case("mirror", "promote", "--link", "l", exit=2, says="Missing option '--topics'"),
    case(*START, "--topics", "x", "--copy", "fast", exit=2, says="Invalid value for '--copy'"),
    case(
        *START,
        "--topics",
        "x",
        "--copy",
        "bytes",
        "--producer-property",
        "compression.type=zstd",
        exit=2,
        says="--copy bytes cannot be used: the producer settings change the records",
    ),
]

VERIFY = [
    case("verify", exit=2, says="pass --link LINK, or --source A"),
    case("verify", "--link", "nope", exit=4, says="no link named 'nope'"),
    case("verify", "--link", "l", "--from", "earliest", exit=2, says="without --link"),
    case("verify", "--source", "source", "--target", "target", exit=2, says="--topics REGEX"),
    case(
        "verify",
        "--source",
        "source",
        "--target",
        "target",
        "--topics",
        "(",
        exit=2,
        says="is not a regex",
    ),
    case("verify", *PAIR, "--from", "latest", exit=2, says="'latest' is not a position"),
    case("verify", *PAIR, "--from", "missing.json", exit=2, says="does not exist"),
    case("verify", *PAIR, "--from", "bad.json", exit=2, says="must look like", files=VERIFY_FILES),
    case(
        "verify", *PAIR, "--from", "shape.json", exit=2, says="must look like", files=VERIFY_FILES
    ),
    case(
        "verify", *PAIR, "--from", "neg.json", exit=2, says="cannot be negative", files=VERIFY_FILES
    ),
    case(
        "verify",
        "--source",
        "nope",
        "--target",
        "target",
        "--topics",
        "x",
        exit=2,
        says="unknown cluster 'nope'",
    ),
    case("verify", *PAIR, exit=3, says=UNREACHABLE),
]

# A store that exists already: read, never written, by a refused command.
WITH_STORE = [
    case("mirror", "status", "--link", "nope", exit=4, says="known links: l", files=STORE),
    case("verify", "--link", "nope", exit=4, says="known links: l", files=STORE),
    case(
        "mirror",
        "start",
        "--source",
        "target",
        "--target",
        "source",
        "--topics",
        "x",
        "--link",
        "l",
        exit=5,
        says="already mirrors source -> target",
        files=STORE,
    ),
    case(
        "mirror",
        "promote",
        "--link",
        "l",
        "--topics",
        "payments",
        exit=4,
        says="no mirrored topic",
        files=STORE,
    ),
    case(*START, "--topics", "x", "--link", "l", exit=3, says=UNREACHABLE, files=STORE),
    case("groups", "migrate", "--link", "l", "--group", "g", exit=3, says=UNREACHABLE, files=STORE),
]

test_topics = run_cases(TOPICS)
test_groups = run_cases(GROUPS)
test_mirror = run_cases(MIRROR)
test_verify = run_cases(VERIFY)
test_with_an_existing_store = run_cases(WITH_STORE)


@pytest.mark.parametrize(
    ("argv", "exit_code", "code"),
    [
        (("groups", "list", "--cluster", "target", "--json"), 3, "unreachable"),
        (("mirror", "status", "--link", "nope", "--json"), 4, "not-found"),
        (("verify", "--link", "nope", "--json"), 4, "not-found"),
        ((*START, "--topics", "x", "--from", "nope", "--json"), 2, "config"),
        (("groups", "sync", "--link", "l", "--interval", "0", "--json"), 2, "usage"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else str(value),
)
def test_json_errors_are_one_object(
    argv: tuple[str, ...],
    exit_code: int,
    code: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(PASSWORD_ENV, SECRETS[0])
    monkeypatch.delenv("KMIGRATE_CONFIG", raising=False)
    folder = tmp_path / "work"
    prepare(folder, case(*argv, exit=exit_code, says=""))
    before = snapshot(folder)
    ran = run_in(folder, argv)
    assert ran.code == exit_code, ran.stderr
    [line] = ran.stderr.splitlines()
    error = json.loads(line)
    assert (error["exit"], error["code"]) == (exit_code, code) and error["error"]
    assert ran.stdout == "" and snapshot(folder) == before


@pytest.mark.parametrize(
    ("name", "value", "argv"),
    [
        ("KMIGRATE_MIRROR_TASK_BYTES", "lots", (*START, "--topics", "t")),
        ("KMIGRATE_MIRROR_DRIVER_OFFSETS", "-1", (*START, "--topics", "t")),
        ("KMIGRATE_VERIFY_DRIVER_OFFSETS", "some", ("verify", "--link", "l")),
    ],
)
def test_a_bad_tuning_variable_is_refused_before_any_cluster_is_asked(
    name: str, value: str, argv: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.integration.cli_contract.harness import check

    monkeypatch.setenv(name, value)
    check(tmp_path, case(*argv, exit=2, says=f"{name} must be a whole number"), monkeypatch)
