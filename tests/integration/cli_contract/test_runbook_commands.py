"""Bad input to `plan`, `migrate`, `reassign`, `brokers`, `serve` and `demo`: see
harness.py. Every case is refused before a cluster is contacted (nothing answers at the
configured addresses: a command that tried would exit 3) and leaves the folder as it was.

Cases that read the metadata store (an unknown migration, a cluster with no reassignment)
need the store to stay unopened by reads; they are in STORE_CASES."""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kmigrate.config import load_settings
from kmigrate.store import reassignments as stored
from kmigrate.store import store_for
from tests.integration.cli_contract.harness import (
    CONFIG,
    PASSWORD_ENV,
    SECRETS,
    Case,
    case,
    check,
    prepare,
    run_cases,
    run_in,
    snapshot,
)


@pytest.fixture(autouse=True, scope="module")
def _imported_elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Import the commands once, in a scratch folder: the gateway's protocol library
    imports hypothesis, which writes ./.hypothesis on first import (the real entry point
    blocks that; in-process callers such as this test keep hypothesis)."""
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("imports"))
    try:
        for module in ("plan", "migrate", "reassign", "serve", "demo"):
            importlib.import_module(f"kmigrate.cli.{module}")
    finally:
        os.chdir(cwd)
    yield


PLAN = """\
name: m
source: source
target: target
topics:
  - name: orders
    partitions: 3
"""
BINARY = bytes(range(256)) * 4  # not UTF-8
NUL = "name: m\x00\x00\x00\n"  # UTF-8, but binary


def moves(**kmigrate: object) -> str:
    """A reassignment plan file as `reassign plan` writes it (with edits)."""
    body: dict[str, object] = {
        "version": 1,
        "partitions": [{"topic": "orders", "partition": 0, "replicas": [2, 1]}],
        "kmigrate": {
            "cluster": "source",
            "before": [{"topic": "orders", "partition": 0, "replicas": [1, 2]}],
        }
        | kmigrate,
    }
    return json.dumps(body)


def moves_with(partitions: list[object]) -> str:
    return json.dumps({"version": 1, "partitions": partitions, "kmigrate": {"cluster": "source"}})


NEW = ("plan", "new", "--source", "source", "--target", "target", "--topics", "orders")
REASSIGN = ("reassign", "plan", "--cluster", "source")
PLAN_FILE = {"plan.yaml": PLAN}
MOVES = {"moves.json": moves()}

PLAN_CASES = [
    case("plan", "new", exit=2, says="Missing option '--source'"),
    case("plan", "new", "--source", "nope", "--target", "target", "--topics", "t", "-o", "p.yaml",
         exit=2, says="unknown cluster 'nope'"),
    case("plan", "new", "--source", "source", "--target", "nope", "--topics", "t", "-o", "p.yaml",
         exit=2, says="unknown cluster 'nope'"),
    case("plan", "new", "--source", "source", "--target", "source", "--topics", "t", "-o", "p",
         exit=2, says="same cluster"),
    case("plan", "new", "--source", "source", "--target", "target", "--topics", "(", "-o", "p",
         exit=2, says="is not a regex"),
    case(*NEW, "--groups", "[", "-o", "p.yaml", exit=2, says="is not a regex"),
    case(*NEW, "-o", "nowhere/p.yaml", exit=2, says="folder nowhere does not exist"),
    case(*NEW, "-o", "plan.yaml", exit=5, says="plan.yaml exists; pass --force",
         files=PLAN_FILE),
    case(*NEW, "-o", ".", exit=2, says="is a folder"),
    case(*NEW, "--name", "not a name!", "-o", "p.yaml", exit=2, says="is not allowed"),
    case(*NEW, "--order", "sideways", "-o", "p.yaml", exit=2, says="'--order'"),
    case(*NEW, "--via-gateway", "-o", "p.yaml", exit=2, says="--via-gateway needs"),
    case("plan", "check", "missing.yaml", exit=4, says="plan missing.yaml does not exist"),
    case("plan", "check", "plan.yaml", exit=2, says="plan.yaml", files={"plan.yaml": BINARY}),
    case("plan", "check", "plan.yaml", exit=2, says="binary", files={"plan.yaml": NUL}),
    case("plan", "check", "plan.yaml", exit=2, says="plan.yaml: bad YAML at line",
         files={"plan.yaml": "name: [m\n"}),
    case("plan", "check", "plan.yaml", exit=2, says="a plan is a mapping",
         files={"plan.yaml": "- orders\n"}),
    case("plan", "check", "plan.yaml", exit=2, says="unknown cluster 'nope'",
         files={"plan.yaml": PLAN.replace("target: target", "target: nope")}),
    case("plan", "check", "plan.yaml", exit=2, says="topics",
         files={"plan.yaml": PLAN.split("topics:", maxsplit=1)[0] + "topics: []\n"}),
    case("plan", "check", "plan.yaml", "--sample", "0", exit=2, says="'--sample'",
         files=PLAN_FILE),
]  # fmt: skip

MIGRATE_CASES = [
    case("migrate", "start", "missing.yaml", exit=4, says="plan missing.yaml does not exist"),
    case("migrate", "start", "plan.yaml", exit=2, says="not UTF-8", files={"plan.yaml": BINARY}),
    case("migrate", "start", "plan.yaml", exit=2, says="source and target are the same",
         files={"plan.yaml": PLAN.replace("target: target", "target: source")}),
    case("migrate", "promote", exit=2, says="Missing option '--topics'"),
    case("migrate", "promote", "--topics", "(", exit=2, says="is not a regex"),
    case("migrate", "promote", "--topics", "a", "b", exit=2, says="not both"),
    case("migrate", "promote", "--topics", "t", "--quiet-period", "5x", exit=2,
         says="'5x' is not a duration"),
    case("migrate", "promote", "--topics", "t", "--timeout", "0", exit=2,
         says="'0' is not a duration"),
    case("migrate", "promote", "--topics", "t", "--timeout", "-5m", exit=2,
         says="is not a duration"),
    case("migrate", "consumers", exit=2, says="Missing option '--groups'"),
    case("migrate", "consumers", "--groups", "*", exit=2, says="is not a regex"),
    case("migrate", "consumers", "--groups", "g", "--wait", "--timeout", "1y", exit=2,
         says="'1y' is not a duration"),
    case("migrate", "consumers", "--groups", "g", "--wait", "soon", exit=2,
         says="'soon' is not a duration"),
    case("migrate", "retire", exit=2, says="Missing option '--topics'"),
    case("migrate", "retire", "--topics", "[", "--yes", exit=2, says="is not a regex"),
    case("migrate", "rollback", exit=2, says="Missing option '--topics'"),
    case("migrate", "rollback", "--topics", "t", "--force", exit=2, says="No such option"),
    case("migrate", "history", "--last", "0", exit=2, says="'--last'"),
    case("migrate", "status", "--watch", "--bogus", exit=2, says="No such option"),
]  # fmt: skip

REASSIGN_CASES = [
    case(*REASSIGN, "-o", "p.json", exit=2, says="give exactly one goal"),
    case(*REASSIGN, "--drain", "1", "--rebalance", "-o", "p.json", exit=2,
         says="give exactly one goal"),
    case(*REASSIGN, "--drain", "x,y", "-o", "p.json", exit=2, says="--drain x,y"),
    case(*REASSIGN, "--drain", "-1", "-o", "p.json", exit=2, says="give broker ids"),
    case(*REASSIGN, "--add-brokers", ",", "-o", "p.json", exit=2, says="give broker ids"),
    case("reassign", "plan", "--cluster", "nope", "--rebalance", "-o", "p.json", exit=2,
         says="unknown cluster 'nope'"),
    case(*REASSIGN, "--rebalance", "--topics", "(", "-o", "p.json", exit=2,
         says="is not a regex"),
    case(*REASSIGN, "--replication-factor", "0", "-o", "p.json", exit=2,
         says="'--replication-factor'"),
    case(*REASSIGN, "--from-file", "missing.json", "-o", "p.json", exit=4,
         says="reassignment file missing.json does not exist"),
    case(*REASSIGN, "--from-file", "f.json", "-o", "p.json", exit=2, says="f.json is not JSON",
         files={"f.json": "{version: 1"}),
    case(*REASSIGN, "--from-file", "f.json", "-o", "p.json", exit=2, says="not UTF-8",
         files={"f.json": BINARY}),
    case(*REASSIGN, "--rebalance", "-o", "nowhere/p.json", exit=2, says="does not exist"),
    case(*REASSIGN, "--rebalance", "-o", "moves.json", exit=5, says="exists", files=MOVES),
    case("reassign", "apply", "missing.json", exit=4, says="missing.json does not exist"),
    case("reassign", "apply", "moves.json", exit=2,
         says="cannot read reassignment plan moves.json: not UTF-8", files={"moves.json": BINARY}),
    case("reassign", "apply", "moves.json", exit=2,
         says="cannot read reassignment plan moves.json: not text",
         files={"moves.json": "\x00\x01\x02"}),
    case("reassign", "apply", "moves.json", exit=2,
         says="moves.json: kmigrate.before[0] has no 'topic'",
         files={"moves.json": moves(before=[{"partition": 0, "replicas": [1, 2]}])}),
    case("reassign", "apply", "moves.json", exit=2,
         says="moves.json: kmigrate.before must be a list",
         files={"moves.json": moves(before={"orders": 1})}),
    case("reassign", "apply", "moves.json", exit=2, says="moves.json: kmigrate.cluster must be",
         files={"moves.json": moves(cluster=7)}),
    case("reassign", "apply", "moves.json", exit=2,
         says="moves.json: partitions[0] has no 'replicas'",
         files={"moves.json": moves_with([{"topic": "orders", "partition": 0}])}),
    case("reassign", "apply", "moves.json", exit=2,
         says="partitions[0].replicas must be a list of broker ids",
         files={"moves.json": moves_with([{"topic": "o", "partition": 0, "replicas": ["a"]}])}),
    case("reassign", "apply", "moves.json", exit=2, says="partitions[0].partition must be",
         files={"moves.json": moves_with([{"topic": "o", "partition": -1, "replicas": [1]}])}),
    case("reassign", "apply", "moves.json", exit=2, says="must list distinct broker ids",
         files={"moves.json": moves_with([{"topic": "o", "partition": 0, "replicas": [1, 1]}])}),
    case("reassign", "apply", "moves.json", exit=2, says="orders[0] is listed twice",
         files={"moves.json": moves_with(
             [{"topic": "orders", "partition": 0, "replicas": [1]}] * 2)}),
    case("reassign", "apply", "moves.json", exit=2, says="'partitions' must be a list",
         files={"moves.json": '{"version": 1}'}),
    case("reassign", "apply", "moves.json", "--throttle", "fast", exit=2,
         says="--throttle 'fast'", files=MOVES),
    case("reassign", "apply", "moves.json", "--throttle", "0MB", exit=2,
         says="--throttle '0MB'", files=MOVES),
    case("reassign", "apply", "moves.json", "--max-moves", "0", exit=2, says="'--max-moves'",
         files=MOVES),
    case("reassign", "apply", "moves.json", exit=2, says="names no cluster; pass --cluster",
         files={"moves.json": moves(cluster=None)}),
    case("reassign", "apply", "moves.json", exit=2, says="unknown cluster 'nope'",
         files={"moves.json": moves(cluster="nope")}),
    case("reassign", "status", "--cluster", "nope", exit=2, says="unknown cluster 'nope'"),
    case("reassign", "cancel", "--cluster", "nope", "--yes", exit=2,
         says="unknown cluster 'nope'"),
]  # fmt: skip

BROKERS_CASES = [
    case("brokers", "drain", "x", "--cluster", "source", exit=2, says="IDS x"),
    case("brokers", "add", ",", "--cluster", "source", "--yes", exit=2, says="give broker ids"),
    case("brokers", "drain", "1", "--cluster", "source", "--throttle", "lots", exit=2,
         says="--throttle 'lots'"),
    case("brokers", "drain", "1", "--cluster", "nope", "--dry-run", exit=2,
         says="unknown cluster 'nope'"),
    case("brokers", "add", "4", exit=2, says="Missing option '--cluster'"),
    case("brokers", "elect", "--cluster", "source", exit=2, says="Missing option '--preferred'"),
    case("brokers", "elect", "--cluster", "source", "--preferred", "--topics", "(", exit=2,
         says="is not a regex"),
    case("brokers", "list", "--cluster", "nope", exit=2, says="unknown cluster 'nope'"),
]  # fmt: skip

TOKEN = {"token": "a-token-of-24-characters"}
SERVE_CASES = [
    case("serve", "--listen", "nope", exit=2, says="--listen 'nope': give HOST:PORT"),
    case("serve", "--listen", "127.0.0.1:0", exit=2, says="give HOST:PORT"),
    case("serve", "--listen", "127.0.0.1:70000", exit=2, says="give HOST:PORT"),
    case("serve", "--listen", "0.0.0.0:8080", exit=2, says="needs --token-file"),
    case("serve", "--token-file", "missing", exit=2, says="--token-file missing"),
    case("serve", "--token-file", "token", exit=2, says="at least 16 characters",
         files={"token": "short"}),
    case("serve", "--token-file", "token", exit=2, says="not UTF-8", files={"token": BINARY}),
    case("serve", "--interval", "0.1", exit=2, says="shorter than 0.2s"),
    case("serve", "--interval", "soon", exit=2, says="'soon' is not a duration"),
    case("serve", "--refresh", "0.1", exit=2, says="shorter than 0.2s"),
    case("serve", "--listen", "127.0.0.1:99999", "--token-file", "token", exit=2,
         says="give HOST:PORT", files=TOKEN),
    case("demo", "--rate", "0", exit=2, says="'--rate'"),
    case("demo", "--dir", "token", exit=2, says="'--dir'", files=TOKEN),
]  # fmt: skip

test_plan_input = run_cases(PLAN_CASES)
test_migrate_input = run_cases(MIGRATE_CASES)
test_reassign_input = run_cases(REASSIGN_CASES)
test_brokers_input = run_cases(BROKERS_CASES)
test_serve_input = run_cases(SERVE_CASES)


STORE_CASES = [
    case("migrate", "status", "--migration", "nope", exit=4, says="no migration named 'nope'"),
    case("migrate", "history", "--migration", "nope", exit=4, says="no migration named 'nope'"),
    case("migrate", "promote", "--topics", "t", "--migration", "nope", exit=4,
         says="no migration named 'nope'"),
    case("migrate", "rollback", "--topics", "t", "--yes", exit=4, says="no migration yet"),
    case("reassign", "cancel", "--cluster", "source", "--yes", exit=4,
         says="cluster 'source' has no reassignment under way"),
    case("reassign", "apply", "moves.json", "--resume", exit=4,
         says="no reassignment under way to resume", files=MOVES),
    # good input, clusters down: exit 3, and reading (checking) leaves no store behind
    case("plan", "check", "plan.yaml", exit=3, says="cannot reach cluster 'source'",
         files=PLAN_FILE),
]  # fmt: skip


@pytest.mark.parametrize("c", STORE_CASES, ids=[c.id for c in STORE_CASES])
def test_named_things_that_do_not_exist(
    c: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    check(tmp_path / "work", c, monkeypatch)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("migrate", "status"), "no migration yet"),
        (("migrate", "history", "--json"), '"events": []'),
        (("reassign", "status", "--cluster", "source"), "no reassignment applied"),
    ],
)
def test_nothing_yet_is_exit_0(
    argv: tuple[str, ...], says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path, monkeypatch)
    before = snapshot(folder)
    ran = run_in(folder, argv)
    assert ran.code == 0, ran.stderr
    assert says in ran.stdout
    assert snapshot(folder) == before


def _folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(PASSWORD_ENV, SECRETS[0])
    monkeypatch.delenv("KMIGRATE_CONFIG", raising=False)
    folder = tmp_path / "work"
    prepare(folder, case("-", exit=0, says=""))
    return folder


def test_json_errors_are_one_json_object(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _folder(tmp_path, monkeypatch)
    (folder / "moves.json").write_text(moves(before=[{"partition": 0, "replicas": [1]}]))
    before = snapshot(folder)
    ran = run_in(folder, ["reassign", "apply", "moves.json", "--json"])
    assert ran.code == 2
    error = json.loads(ran.stderr)
    assert error["exit"] == 2 and error["code"] == "config"
    assert "kmigrate.before[0] has no 'topic'" in error["error"]
    assert ran.stdout == "" and snapshot(folder) == before


def test_old_spellings_still_work_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path, monkeypatch)
    ran = run_in(folder, ["migrate", "consumers", "--groups", "g", "--wait", "0"])
    assert ran.code == 2  # the old value is read as a duration (0 is not one)
    assert "warning: --wait SECONDS is deprecated" in ran.stderr
    ran = run_in(folder, ["migrate", "promote", "t1", "t2", "--timeout", "1x"])
    assert ran.code == 2 and "'1x' is not a duration" in ran.stderr
    ran = run_in(folder, ["migrate", "promote", "t1", "--topics", "t1"])
    assert "warning: positional TOPIC is deprecated" in ran.stderr
    assert "not both" in ran.stderr
    ran = run_in(folder, ["serve", "--refresh", "soon"])
    assert ran.stderr.startswith("warning: --refresh is deprecated")
    assert "'soon' is not a duration" in ran.stderr


def _files(folder: Path) -> dict[str, str]:
    """The folder's files but SQLite's -wal/-shm companions, which an in-process reader
    that has not closed its connection leaves behind (empty: nothing written)."""
    seen = snapshot(folder)
    wal = folder / "kmigrate.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0, "the store was written"
    return {k: v for k, v in seen.items() if not k.endswith(("-wal", "-shm"))}


def test_a_destructive_step_in_a_script_without_yes_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`reassign cancel` without --yes and no terminal: shows what it would cancel, says
    how to go ahead, exits 0, and the folder (with its store) is as it was."""
    folder = _folder(tmp_path, monkeypatch)
    store = store_for(load_settings(folder / "kmigrate.yaml"))
    stored.begin(store, "source", moves(), [("orders", 0)], 1_000_000, 10)
    store.close()
    before = _files(folder)
    for extra, says in (([], "nothing changed: rerun with --yes"), (["--dry-run"], "dry run")):
        ran = run_in(folder, ["reassign", "cancel", "--cluster", "source", *extra])
        assert ran.code == 0, ran.stderr
        assert "this would cancel the reassignment of cluster 'source'" in ran.stdout
        assert says in ran.stderr
        assert _files(folder) == before
    ran = run_in(folder, ["reassign", "cancel", "--cluster", "source", "--json"])
    assert ran.code == 0 and json.loads(ran.stdout)["cancelled"] == []


assert len(PLAN_CASES + MIGRATE_CASES + REASSIGN_CASES + BROKERS_CASES + SERVE_CASES) >= 45
assert CONFIG  # the folder's kmigrate.yaml (two clusters nothing answers)
