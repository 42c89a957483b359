"""`kmigrate kraft`: take a ZooKeeper-mode Kafka cluster (3.9.x) to KRaft (KIP-866)."""

from __future__ import annotations

from pathlib import Path

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app, plan_output_options
from kmigrate.cli.operations import acting, choose_operator, is_sandbox_cluster, print_history
from kmigrate.cli.options import json_option
from kmigrate.config import Settings
from kmigrate.errors import ConfigError, ConflictError, KMigrateError, NotFoundError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kraft.commands import CommandOperator, Templates
from kmigrate.kraft.conversion import (
    PHASES,
    Run,
    finalize,
    kraft_conversion,
    revert,
    run_migration,
)
from kmigrate.kraft.operator import KRaftOperator
from kmigrate.kraft.plan import (
    HIDDEN_SETTINGS,
    ClusterView,
    KRaftPlan,
    load_plan,
    parse_plan,
    plan_kraft,
)
from kmigrate.kraft.world import Znodes, broker_mode_direct, read_cluster
from kmigrate.net import free_ports
from kmigrate.serve.security import is_loopback
from kmigrate.store import store_for

kafka_option = click.option(
    "--kafka", "kafka", required=True, metavar="CLUSTER", help="The ZooKeeper-mode Kafka cluster."
)
timeout_option = click.option(
    "--timeout",
    type=click.FloatRange(1),
    default=180.0,
    show_default=True,
    help="Seconds to wait for any one condition (a broker back, the metadata migrated).",
)
broker_command_option = click.option(
    "--broker-command",
    metavar="TEMPLATE",
    help="Real hosts: apply the changes in {changes_file} ('set K=V' / 'remove K' lines) to "
    "one broker's server.properties and restart it. Placeholders {host} {broker} {changes_file}.",
)
controller_command_option = click.option(
    "--controller-command",
    metavar="TEMPLATE",
    help="Real hosts: {action} (start|stop|deprovision) one KRaft controller; start installs "
    "{properties_file}, formats with {cluster_id} once and (re)starts it. Placeholders {host} "
    "{id} {action} {properties_file} {cluster_id}.",
)


@click.group("kraft")
def group() -> None:
    """Take a ZooKeeper-mode cluster to KRaft: plan, migrate, finalize (or revert)."""


@group.command("plan")
@kafka_option
@click.option(
    "--controllers",
    "count",
    type=click.IntRange(1, 9),
    default=3,
    show_default=True,
    help="KRaft controllers to provision (an odd number: 3 tolerates one failure).",
)
@click.option(
    "--controller",
    "endpoints",
    multiple=True,
    metavar="HOST:PORT",
    help="Where each controller listens (repeat; default on a loopback cluster: free ports "
    "on 127.0.0.1).",
)
@click.option(
    "--authorizer-setting",
    "authorizer_settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A setting of the brokers' authorizer that Kafka does not show "
    f"({', '.join(HIDDEN_SETTINGS)}), as in their server.properties (repeat; read from the "
    "sandbox's files for a sandbox cluster). The controllers get exactly the brokers' values.",
)
@click.option(
    "--probe-as",
    "probe_as",
    multiple=True,
    metavar="CLUSTER",
    help="Also ask the authorization probes as this clusters.yaml entry: the same cluster "
    "reached with another principal's credentials (repeat). Default: only as --kafka's.",
)
@plan_output_options
@json_option
@pass_app
def plan(
    app: AppContext,
    kafka: str,
    count: int,
    endpoints: tuple[str, ...],
    authorizer_settings: tuple[str, ...],
    probe_as: tuple[str, ...],
    output: Path,
    force: bool,
    as_json: bool,
) -> None:
    """Read the cluster and write the migration's steps: controller ids and configs, each
    broker's configuration for roll 1 (migration mode) and roll 2 (KRaft). Refuses what
    Kafka's guide forbids, and what would change who may do what. Nothing changes."""
    if output.exists() and not force:
        raise ConflictError(f"{output} exists; pass --force to overwrite it")
    given = _key_values(authorizer_settings)
    cluster = app.settings.cluster(kafka)
    for name in probe_as:
        app.settings.cluster(name)  # known before anything is asked
    with ClusterAdmin(cluster) as admin:
        view, connect = read_cluster(admin, kafka)
    controllers = _endpoints(endpoints, count, [b.host for b in view.brokers])
    planned = plan_kraft(
        view,
        controllers,
        connect,
        given or _from_sandbox(app.settings, view),
        cluster.as_librdkafka().get("sasl.username"),
    ).model_copy(update={"probe_as": list(probe_as)})
    output.write_text(planned.to_yaml())
    if as_json:
        render.print_json({"plan": str(output), **planned.model_dump(mode="json")})
        return
    render.out.print(
        f"wrote {output}: migrate cluster {kafka} ({len(planned.brokers)} broker(s), id "
        f"{planned.cluster_id}) to KRaft with controller(s) {planned.voters}",
        soft_wrap=True,
    )
    for line in (
        "controllers: provision and format them (migration enabled, same cluster id)",
        f"roll1: each broker restarted with {', '.join(sorted(planned.roll1.set))}",
        "dual-write: wait until the controller migrated the metadata",
        f"roll2: each broker restarted as a KRaft broker (drops {', '.join(planned.roll2.remove)})",
        "finalize (kraft finalize, the point of no return): controllers without ZooKeeper",
    ):
        render.out.print(f"  {line}", soft_wrap=True)


def _key_values(given: tuple[str, ...]) -> dict[str, str]:
    found: dict[str, str] = {}
    for text in given:
        key, sep, value = text.partition("=")
        if not sep or key.strip() not in HIDDEN_SETTINGS:
            raise ConfigError(
                f"--authorizer-setting {text!r}: give KEY=VALUE, KEY one of "
                + ", ".join(HIDDEN_SETTINGS)
            )
        found[key.strip()] = value.strip()
    return found


def _from_sandbox(settings: Settings, view: ClusterView) -> dict[str, str]:
    """The hidden authorizer settings from a sandbox cluster's server.properties (the
    same on every broker); nothing for a cluster the sandbox does not run."""
    wanted = {k for b in view.brokers for k in b.hidden}
    folder = settings.path.parent if settings.path else Path.cwd()
    if not wanted or not is_sandbox_cluster(folder, view.name):
        return {}
    from kmigrate.sandbox.kraft_operator import SandboxKRaftOperator

    sandbox = SandboxKRaftOperator(folder, view.name)
    found = [
        {k: v for k, v in sandbox.broker_settings(b.broker_id).items() if k in wanted}
        for b in view.brokers
    ]
    if any(f != found[0] for f in found):
        raise ConflictError(f"the brokers of '{view.name}' differ in {', '.join(sorted(wanted))}")
    return found[0]


def _endpoints(given: tuple[str, ...], count: int, hosts: list[str]) -> list[tuple[str, int]]:
    if given:
        if len(given) != count:
            raise ConfigError(f"--controller given {len(given)} time(s) for --controllers {count}")
        found = []
        for text in given:
            host, _, port = text.rpartition(":")
            if not host or not port.isdigit():
                raise ConfigError(f"--controller {text!r}: give HOST:PORT")
            found.append((host, int(port)))
        return found
    if not all(is_loopback(h) for h in hosts):
        raise ConfigError(
            f"pass --controller HOST:PORT for each of the {count} controller(s): the brokers "
            "are not on this machine"
        )
    return [("127.0.0.1", port) for port in free_ports(count)]


def _run(
    app: AppContext,
    plan_file: Path,
    command: str,
    templates: Templates,
    timeout: float,
    until: str = PHASES[-1],
) -> None:
    planned = load_plan(plan_file)
    settings = app.settings
    if planned.needs_secret and not settings.cluster(planned.kafka).as_librdkafka().get(
        "sasl.password"
    ):
        raise ConfigError(
            f"{plan_file}: the nodes authenticate each other as {planned.sasl_user}; give its "
            f"sasl.password for cluster '{planned.kafka}' in clusters.yaml"
        )
    op = kraft_conversion(store_for(settings), planned.kafka, render.progress)
    steps = {"migrate": run_migration, "finalize": finalize, "revert": revert}
    named = f"kraft {command} {plan_file.name}"
    with acting(op, named, settings.cluster(planned.kafka)) as (admin, status):
        operator = _operator(settings, planned, templates)
        steps[command](
            Run(
                planned,
                plan_file.read_text(),
                op,
                operator,
                admin,
                timeout,
                status,
                until,
                tuple(settings.cluster(n) for n in planned.probe_as),
            )
        )


def _operator(settings: Settings, planned: KRaftPlan, templates: Templates) -> KRaftOperator:
    """The operator's templates when given, else the sandbox when it runs this cluster."""
    hosts = {c.node_id: c.host for c in planned.controllers}

    def in_sandbox(folder: Path) -> KRaftOperator:
        from kmigrate.sandbox.kraft_operator import SandboxKRaftOperator

        return SandboxKRaftOperator(folder, planned.kafka)

    return choose_operator(
        settings,
        planned.kafka,
        templates.given,
        lambda: CommandOperator(templates, planned.brokers, hosts, render.progress),
        in_sandbox,
        "--broker-command and --controller-command (README: to KRaft)",
    )


@group.command("migrate")
@click.argument("plan_file", type=click.Path(path_type=Path))
@click.option(
    "--until",
    type=click.Choice(PHASES),
    default=PHASES[-1],
    show_default=True,
    help="Stop after this phase (e.g. dual-write, to watch the cluster there a while).",
)
@timeout_option
@broker_command_option
@controller_command_option
@pass_app
def migrate(
    app: AppContext,
    plan_file: Path,
    until: str,
    timeout: float,
    broker_command: str | None,
    controller_command: str | None,
) -> None:
    """Run the plan up to every broker a KRaft broker (controllers, roll 1, dual-write,
    roll 2), one guarded step at a time; the metadata must read the same after each.
    Resumable: after any interruption, run the same command again."""
    _run(app, plan_file, "migrate", Templates(broker_command, controller_command), timeout, until)


@group.command("finalize")
@click.argument("plan_file", type=click.Path(path_type=Path))
@click.option("--yes", is_flag=True, help="Do not ask (scripts).")
@timeout_option
@broker_command_option
@controller_command_option
@pass_app
def finalize_command(
    app: AppContext,
    plan_file: Path,
    yes: bool,
    timeout: float,
    broker_command: str | None,
    controller_command: str | None,
) -> None:
    """The point of no return: the controllers restart without ZooKeeper. After it the
    cluster cannot go back to ZooKeeper mode."""
    planned = load_plan(plan_file)
    if not yes:
        render.out.print(
            f"Finalizing cluster {planned.kafka}: its controllers stop writing ZooKeeper. This is "
            "the POINT OF NO RETURN: `kmigrate kraft revert` is impossible afterwards.",
            soft_wrap=True,
        )
        if not click.confirm("finalize?", default=False):
            raise ConflictError("not finalized (answered no); nothing changed")
    _run(app, plan_file, "finalize", Templates(broker_command, controller_command), timeout)


@group.command("revert")
@click.argument("plan_file", type=click.Path(path_type=Path))
@timeout_option
@broker_command_option
@controller_command_option
@pass_app
def revert_command(
    app: AppContext,
    plan_file: Path,
    timeout: float,
    broker_command: str | None,
    controller_command: str | None,
) -> None:
    """Before finalization: back to ZooKeeper mode from whatever phase the migration is
    in (Kafka's revert path). Resumable like migrate."""
    _run(app, plan_file, "revert", Templates(broker_command, controller_command), timeout)


@group.command("status")
@kafka_option
@json_option
@pass_app
def status(app: AppContext, kafka: str, as_json: bool) -> None:
    """The migration's phase, each broker's mode and what ZooKeeper says."""
    settings = app.settings
    record = kraft_conversion(store_for(settings), kafka).get()
    if record is None:
        raise NotFoundError(f"no migration of cluster '{kafka}' to KRaft; plan one with kraft plan")
    planned = parse_plan(record.plan_yaml, "the stored plan")
    cluster = settings.cluster(kafka)
    modes = {b: broker_mode_direct(cluster, planned.brokers[b], b) for b in sorted(planned.brokers)}
    try:
        znodes: Znodes | None = Znodes.read(planned.zookeeper_connect)
    except KMigrateError:  # ZooKeeper unreachable (after finalize it may be gone)
        znodes = None
    body = {
        "kafka": kafka,
        "phase": record.phase,
        "controllers": planned.voters,
        "brokers": {str(b): m for b, m in modes.items()},
        "zookeeper": None
        if znodes is None
        else {
            "controller": znodes.controller_id,
            "migration_offset": znodes.metadata_offset,
            "registered": list(znodes.registered),
        },
    }
    if as_json:
        render.print_json(body)
        return
    render.out.print(f"cluster {kafka}: migration to KRaft, phase reached: {record.phase}")
    render.table(None, ["broker", "mode"], [(str(b), m) for b, m in modes.items()])
    if znodes is not None:
        render.out.print(
            f"ZooKeeper: /controller {znodes.controller_id}, /migration offset "
            f"{znodes.metadata_offset}, registered brokers {list(znodes.registered)}"
        )


@group.command("history")
@kafka_option
@json_option
@pass_app
def history_command(app: AppContext, kafka: str, as_json: bool) -> None:
    """Every step of the cluster's migration to KRaft, in order."""
    events = kraft_conversion(store_for(app.settings), kafka).history()
    print_history(kafka, events, as_json, width=120)
