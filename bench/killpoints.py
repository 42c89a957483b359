"""The kill-point sweep: every phased operation SIGKILLed at each of its step boundaries
and at seeded random moments inside its steps, run again until it finishes, and then
everything a user relies on compared with before.

    .venv/bin/python bench/killpoints.py [--operation kraft|kraft-revert|zk|reassign|migrate|all]
        [--seed N] [--random K] [--rate 500] [--controllers 3] [--revert-from roll2]

For each operation, on a sandbox of its own in bench/.work/killpoints/<operation>, with an
idempotent acks=all producer writing ``--rate`` numbered records/s and a consumer group
committing after every poll throughout:

- kraft: a 3-broker ZooKeeper-mode Kafka 3.9.1 cluster to KRaft (`kraft migrate`, then
  `kraft finalize --yes`, each swept);
- kraft-revert: the same cluster migrated to ``--revert-from`` (`kraft migrate --until`,
  not killed), then back to ZooKeeper mode (`kraft revert --yes`, swept);
- zk: the same cluster's ZooKeeper ensemble moved to a new one (`zk migrate`);
- reassign: replication factor 2 -> 3 of the loaded topic and a heavy one (`reassign apply
  --max-moves 2 --wait`, rerun with `--resume`), then a throttled move cancelled (`reassign
  cancel`);
- migrate: a guided migration between two KRaft clusters (`migrate start`, `consumers`,
  `promote`; see bench/killpoints_migrate.py);
- gateway: a topic's partitions moved between clusters behind a two-instance gateway
  (`gateway migrate`, two partitions at a time; bench/killpoints_gateway.py).

Each command is a chain (harness/killpoints.py): run 1 is killed at its first progress line,
each rerun at the first boundary not killed at yet, ``--random`` reruns instead a seeded
0.2-10 s after they began (a boundary not killed at yet that comes first is killed at),
until a run finishes. The seed is printed; the same ``--seed`` draws the same delays.

Compared afterwards (harness/userview.py): every acknowledged record once and in order in
its partition, the group read all of them; topics, partitions and replicas (as the
operation should leave them), topic configs, dynamic broker configs, ACLs, idle groups'
offsets, SCRAM credentials, client quotas of every entity kind, and the authorization
probes once kmigrate has them. Results: bench/results/killpoints-<date>.json, one entry per
kill (operation, command, where, seed) with its operation's outcome.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.append(str(HERE.parent))  # harness/: the pieces shared with the kill tests

from clients import Group, Load  # noqa: E402
from common import WORK, results_header, write_results  # noqa: E402

from harness import userview  # noqa: E402
from harness.killpoints import Chain  # noqa: E402
from harness.killrun import chain_run, kmigrate  # noqa: E402
from kmigrate.config import ClusterConfig, load_settings  # noqa: E402
from kmigrate.kafka.admin import ClusterAdmin  # noqa: E402
from kmigrate.sandbox import manager  # noqa: E402
from kmigrate.sandbox.jars import ensure_jars  # noqa: E402

TOPIC, GROUP = "sweep-load", "sweep-group"
OPERATIONS = ("kraft", "kraft-revert", "zk", "reassign", "migrate", "gateway")
SECURE = {"on": False}  # --secure: SASL/SCRAM sandboxes (SCRAM logins compared too)
CONTROLLERS = {"kraft": 3}  # --controllers: the KRaft quorum `--operation kraft` plans
REVERT_FROM = {"phase": "roll2"}  # --revert-from: the phase `kraft-revert` reverts from


@dataclass
class Command:
    """One swept command: how it starts, how a user resumes it after a kill (None:
    nothing left to resume), and how long an inside kill may wait."""

    argv: list[str]
    rerun: Callable[[], list[str] | None]
    span_s: float = 10.0
    before: Callable[[], None] = lambda: None  # what runs first, not killed


@dataclass
class Setup:
    """An operation ready to sweep on a running sandbox."""

    directory: Path
    cluster: ClusterConfig
    commands: list[Command]
    expect: Callable[[userview.Picture], userview.Picture] = lambda p: p
    normalize: Callable[[userview.Picture], userview.Picture] = lambda p: p
    ignore: tuple[str, ...] = (TOPIC, GROUP)
    stop_load_before: int | None = None  # the command the producer stops before
    checks: Callable[[], list[str]] = lambda: []  # what else must hold after
    clients: ClusterConfig | None = None  # where producer and group connect (default: cluster)
    close: Callable[[], None] = lambda: None  # what the operation started besides the sandbox
    passwords: userview.Passwords = field(default_factory=dict)  # SCRAM logins (SASL only)
    notes: dict = field(default_factory=dict)


def jars() -> Path:
    return ensure_jars("3.9.1")  # ConfigCommand: quotas and the default broker configs


def _again(argv: list[str]) -> Callable[[], list[str]]:
    return lambda: argv


def _kraft_planned(directory: Path) -> tuple[Path, ClusterConfig, userview.Passwords, Path]:
    """A furnished, loaded 3-broker ZooKeeper-mode cluster and its KRaft plan."""
    manager.up(directory, manager.UpRequest(clusters=["legacy"], brokers=3, zookeeper="zk/kafka",
                                            nodes=1, secure=SECURE["on"]))  # fmt: skip
    config = directory / "clusters.yaml"
    cluster = load_settings(config).cluster("legacy")
    passwords = userview.furnish(cluster, jars(), topics=6, brokers=3)
    _load_topic(cluster, 3)
    plan = directory / "kraft.yaml"
    _ok(kmigrate(config, "kraft", "plan", "--cluster", "legacy",
                 "--controllers", str(CONTROLLERS["kraft"]), "-o", str(plan)))  # fmt: skip
    return config, cluster, passwords, plan


def kraft_setup(directory: Path) -> Setup:
    config, cluster, passwords, plan = _kraft_planned(directory)
    migrate = kmigrate(config, "kraft", "migrate", str(plan))
    finalize = kmigrate(config, "kraft", "finalize", str(plan), "--yes")
    commands = [Command(migrate, _again(migrate), 20.0), Command(finalize, _again(finalize), 15.0)]
    return Setup(directory, cluster, commands, passwords=passwords)


def kraft_revert_setup(directory: Path) -> Setup:
    """Migrated to REVERT_FROM (not killed), then reverted under the sweep: afterwards a
    ZooKeeper-mode cluster again (every broker, no controller), everything as before."""
    config, cluster, passwords, plan = _kraft_planned(directory)
    phase = REVERT_FROM["phase"]
    until = kmigrate(config, "kraft", "migrate", str(plan), "--until", phase)
    revert = kmigrate(config, "kraft", "revert", str(plan), "--yes")
    status = kmigrate(config, "kraft", "status", "--cluster", "legacy", "--json")

    def back_in_zookeeper_mode() -> list[str]:
        found = json.loads(_ok(status))
        modes = set(found.get("brokers", {}).values())
        if found.get("phase") == "reverted" and modes == {"zk"}:
            return []
        return [f"after the revert: phase {found.get('phase')}, broker modes {sorted(modes)}"]

    def migrated() -> None:
        _ok(until)

    command = Command(revert, _again(revert), 15.0, before=migrated)
    return Setup(directory, cluster, [command], passwords=passwords,
                 checks=back_in_zookeeper_mode, notes={"revert_from": phase})  # fmt: skip


def zk_setup(directory: Path) -> Setup:
    manager.up(directory, manager.UpRequest(clusters=[], ensembles=["old", "new"]))
    manager.up(
        directory,
        manager.UpRequest(
            clusters=["legacy"], brokers=3, zookeeper="old/kafka", secure=SECURE["on"]
        ),
    )
    config = directory / "clusters.yaml"
    cluster = load_settings(config).cluster("legacy")
    passwords = userview.furnish(cluster, jars(), topics=6, brokers=3)
    _load_topic(cluster, 3)
    plan = directory / "move.yaml"
    _ok(kmigrate(config, "zk", "plan", "--cluster", "legacy", "--source-ensemble", "old",
                 "--target-ensemble", "new", "-o", str(plan)))  # fmt: skip
    move = kmigrate(config, "zk", "migrate", str(plan))
    return Setup(directory, cluster, [Command(move, _again(move), 15.0)], passwords=passwords)


def _load_topic(cluster: ClusterConfig, replicas: int) -> None:
    with ClusterAdmin(cluster) as admin:
        admin.create_topic(TOPIC, 6, replication_factor=replicas,
                           configs={"min.insync.replicas": str(replicas - 1)})  # fmt: skip


def _ok(argv: list[str]) -> str:
    import subprocess

    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[4:])} failed: {done.stderr[-1500:]}")
    return done.stdout


def sweep(name: str, setup: Setup, seed: int, inside: int, rate: int) -> dict:
    """Chain every command of the operation under load; compare after."""
    cluster = setup.cluster
    clients = setup.clients or cluster
    load = Load(clients.as_librdkafka(), rate, TOPIC)
    group = Group(clients.as_librdkafka(), TOPIC, GROUP)
    load.start()
    group.start()
    time.sleep(3)  # steady production first
    before = setup.normalize(userview.picture(cluster, jars(), setup.ignore, setup.passwords))
    print(f"{name}: before: {before.metadata.summary}; probes: {before.probes}")
    log = setup.directory / "commands.log"
    kills: list[dict] = []
    failed: str | None = None
    for index, command in enumerate(setup.commands):
        if index == setup.stop_load_before:
            load.done.set()
            load.join(300)
        command.before()
        failed = _chain(name, command, Chain(seed + index, inside, command.span_s), log, kills)
        if failed:
            break
    time.sleep(3)
    load.done.set()
    load.join(300)
    deadline = time.monotonic() + 180
    while not set(group.seen) >= set(load.acked) and time.monotonic() < deadline:
        time.sleep(0.5)
    group.done.set()
    group.join(30)
    after = setup.normalize(
        userview.picture(cluster, jars(), setup.ignore, setup.passwords, before=before)
    )
    problems = userview.record_problems(clients, TOPIC, set(load.acked))
    changed = userview.differences(setup.expect(before), after) + setup.checks()
    missed = len(set(load.acked) - set(group.seen))
    outcome = {
        "finished": failed is None,
        "resume_failure": failed,
        "records": problems or "every acknowledged record once, in order",
        "acknowledged": len(load.acked),
        "produce_failed": len(load.failed),
        "group_missed": missed,
        "group_redelivered": len(group.seen) - len(set(group.seen)),
        "metadata": changed or "identical",
        "metadata_read": before.metadata.summary,
        "probes": before.probed.summary if before.probed is not None else "no authorizer",
        "logins": "compared" if before.logins is not None else "no SASL listener",
        # a resume a user ran that refused (and a later one finished): listed, not a failure
        "resumes_refused": [
            f"{k['command']} run {k['run']}: {k['error']}" for k in kills if "error" in k
        ],
        **setup.notes,
    }
    ok = failed is None and not problems and not changed and not missed and not load.failed
    outcome["ok"] = ok
    for kill in kills:
        kill["outcome"] = "ok" if ok else "FAILED"
    return {"operation": name, "seed": seed, "kills": kills, "outcome": outcome}


def _chain(name: str, command: Command, chain: Chain, log: Path, kills: list[dict]) -> str | None:
    """Runs of ``command`` until one finishes; what went wrong when a resume could not."""
    argv: list[str] | None = command.argv
    failures = 0
    while argv is not None and len(chain.kills) < 80:
        kill = chain_run(argv, log, chain)
        verb = " ".join(argv[5:7])
        entry = {
            "operation": name, "command": verb, "run": len(chain.kills), "where": kill.where,
            "point": kill.point.describe(), "seed": chain.seed,
        }  # fmt: skip
        kills.append(entry)
        print(f"{name}: {verb} run {len(chain.kills)}: {kill.where}", flush=True)
        if kill.exit_code == 0:
            return None
        failures = failures + 1 if kill.exit_code is not None else 0
        if kill.exit_code is not None:
            entry["error"] = _last_error(log)
            if failures >= 2:  # as a user would: once more, then look
                return f"{verb} exited {kill.exit_code} twice in a row: {entry['error']}"
        argv = command.rerun()
    return None if argv is None else f"{name}: {len(chain.kills)} runs without finishing"


def _last_error(log: Path) -> str:
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return (errors or lines or [""])[-1][:400]


def _setup(name: str, directory: Path) -> Setup:
    if name == "gateway":
        from killpoints_gateway import gateway_setup

        return gateway_setup(directory)
    if name == "migrate":
        from killpoints_migrate import migrate_setup

        return migrate_setup(directory)
    if name == "reassign":
        from killpoints_reassign import reassign_setup

        return reassign_setup(directory)
    setups = {"kraft": kraft_setup, "kraft-revert": kraft_revert_setup, "zk": zk_setup}
    return setups[name](directory)


def run_operation(name: str, seed: int, inside: int, rate: int) -> dict:
    directory = WORK / "killpoints" / name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    started = time.monotonic()
    result: dict = {}
    setup: Setup | None = None
    try:  # the sandbox stopped whatever fails, setting up too; its logs kept unless all held
        setup = _setup(name, directory)
        result = sweep(name, setup, seed, inside, rate)
    finally:
        if setup is not None:
            setup.close()
        manager.down(directory, purge=bool(result) and result["outcome"]["ok"], grace=10)
    result["outcome"]["minutes"] = round((time.monotonic() - started) / 60, 1)
    if name.startswith("kraft"):
        result["controllers"] = CONTROLLERS["kraft"]
    return result


def table(results: dict) -> str:
    """The results as bench/README.md's table: per operation, kills at boundaries and
    inside steps, resumes that failed, and the comparison's outcome."""
    rows = ["| operation | seed | kills at boundaries | inside steps | outcome | minutes |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    for run in results["runs"]:
        kills = [k for k in run["kills"] if not k["where"].startswith("finished")]
        inside = sum(1 for k in kills if k["where"].startswith("inside"))
        o = run["outcome"]
        verdict = "all held" if o["ok"] else f"FAILED: {o['resume_failure'] or o['metadata']}"
        if o.get("resumes_refused"):
            verdict += f"; {len(o['resumes_refused'])} resume(s) refused once"
        rows.append(f"| {run['operation']} | {run['seed']} | {len(kills) - inside} | {inside} "
                    f"| {verdict} | {o.get('minutes', '')} |")  # fmt: skip
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--operation", choices=[*OPERATIONS, "all"], default="all")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--random", type=int, default=3, help="inside-step kills per command")
    parser.add_argument("--rate", type=int, default=500, help="records/s produced")
    parser.add_argument(
        "--secure",
        action="store_true",
        help="SASL/SCRAM sandboxes (ZooKeeper mode needs `sandbox up --secure`)",
    )
    parser.add_argument(
        "--controllers", type=int, choices=(1, 3, 5), default=3, help="KRaft quorum (kraft)"
    )
    parser.add_argument(
        "--revert-from",
        choices=("controllers", "roll1", "dual-write", "roll2"),
        default="roll2",
        help="the phase kraft-revert migrates to before the swept revert",
    )
    parser.add_argument("--table", type=Path, help="print a results file's table and stop")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text())))
        return
    SECURE["on"] = args.secure
    CONTROLLERS["kraft"] = args.controllers
    REVERT_FROM["phase"] = args.revert_from
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the sandbox stopped on the way out
    print(f"seed {args.seed} (replay with --seed {args.seed})", flush=True)
    names = OPERATIONS if args.operation == "all" else (args.operation,)
    out = HERE / "results" / f"killpoints-{results_header(0)['date']}.json"
    results = json.loads(out.read_text()) if out.exists() else {**results_header(0), "runs": []}
    results.pop("partitions", None)
    for name in names:
        result = run_operation(name, args.seed, args.random, args.rate)
        print(json.dumps(result["outcome"], indent=2), flush=True)
        results = json.loads(out.read_text()) if out.exists() else results
        results["runs"].append(result)  # every run kept: a failure stays on record
        print(f"wrote {write_results('killpoints-', results)}", flush=True)


if __name__ == "__main__":
    main()
