"""`kmigrate kraft`: take a ZooKeeper-mode Kafka cluster (3.9.x) to KRaft (KIP-866).

The conversion's use cases are imported by the commands that run them: `kmigrate kraft
--help` loads this module and should not load the Kafka, ZooKeeper or store clients.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app, plan_output_options
from kmigrate.cli.kraft_inputs import (
    certificate_principal as certificate_of,
)
from kmigrate.cli.kraft_inputs import (
    free_endpoints,
    from_sandbox,
    given_endpoints,
    key_values,
)
from kmigrate.cli.operations import (
    acting,
    choose_operator,
    cluster_flag,
    print_history,
    read_plan,
)
from kmigrate.cli.options import confirm, confirm_options, json_option, require, timeout_option
from kmigrate.cli.plan_output import writable
from kmigrate.errors import ConfigError, KMigrateError
from kmigrate.kraft.phases import PHASES
from kmigrate.kraft.trust import HIDDEN_SETTINGS

if TYPE_CHECKING:
    from kmigrate.config import Settings
    from kmigrate.kraft.commands import Templates
    from kmigrate.kraft.operator import KRaftOperator
    from kmigrate.kraft.plan import KRaftPlan


wait_option = timeout_option(
    "180s", help="How long to wait for any one condition (a broker back, the metadata migrated)."
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


def _odd(ctx: click.Context, param: click.Parameter, value: int) -> int:
    if value % 2 == 0:
        raise click.BadParameter(
            f"{value} controllers: give an odd number (1, 3, 5, 7 or 9); an even quorum "
            "tolerates no more failures than one controller fewer",
            ctx,
            param,
        )
    return value


@click.group("kraft")
def group() -> None:
    """Take a ZooKeeper-mode cluster to KRaft: plan, migrate, finalize (or revert)."""


@group.command("plan")
@cluster_flag
@click.option(
    "--controllers",
    "count",
    type=click.IntRange(1, 9),
    default=3,
    show_default=True,
    callback=_odd,
    help="KRaft controllers to provision: 1, 3, 5, 7 or 9 (3 tolerates one failure).",
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
    metavar="ENTRY",
    help="Also ask the authorization probes as this clusters.yaml entry: the same cluster "
    "reached with another principal's credentials (repeat). Default: only as --cluster's.",
)
@click.option(
    "--certificate-principal",
    metavar="PRINCIPAL",
    help="SSL between brokers: the principal of the brokers' certificate as they see it "
    "(User:CN=...), which the controllers present too. Default: read from the brokers' PEM "
    "key store where this machine can read it.",
)
@plan_output_options
@json_option
@pass_app
def plan(
    app: AppContext,
    cluster_name: str | None,
    count: int,
    endpoints: tuple[str, ...],
    authorizer_settings: tuple[str, ...],
    probe_as: tuple[str, ...],
    certificate_principal: str | None,
    output: Path,
    force: bool,
    as_json: bool,
) -> None:
    """Read the cluster and write the migration's steps: controller ids and configs, each
    broker's configuration for roll 1 (migration mode) and roll 2 (KRaft). Refuses what
    Kafka's guide forbids, and what would change who may do what. Nothing changes."""
    from kmigrate.kraft import secret as secret_file
    from kmigrate.kraft.plan import plan_kraft, trust_of
    from kmigrate.kraft.world import read_cluster

    kafka = require(cluster_name, "--cluster")
    given = key_values(authorizer_settings)
    certificate_of(None, certificate_principal)  # its form, before anything is asked
    chosen = given_endpoints(endpoints, count)
    cluster = app.settings.cluster(kafka)
    for name in probe_as:
        app.settings.cluster(name)  # known before anything is asked
    writable(output, force)
    with app.workspace.admin(cluster) as admin:
        view, connect = read_cluster(admin, kafka)
    controllers = chosen or free_endpoints(count, [b.host for b in view.brokers])
    hidden = given or from_sandbox(app.settings, view)
    user = cluster.as_librdkafka().get("sasl.username")
    principal = certificate_of(view, certificate_principal)
    trust = trust_of(view, len(controllers), hidden, user, principal)
    secret = secret_file.beside(output) if trust.controller_user else None
    if secret is not None:
        writable(secret, force)
    planned = plan_kraft(
        view, controllers, connect, hidden, user, secret.name if secret else None, principal
    ).model_copy(update={"probe_as": list(probe_as)})
    if secret is not None:
        secret_file.generate(secret)
    output.write_text(planned.to_yaml())
    shown = {"controller_listener": trust.shape, "controller_secret": str(secret or "") or None}
    if as_json:
        render.print_json({"plan": str(output), **planned.model_dump(mode="json"), **shown})
        return
    render.out.print(
        f"wrote {output}: migrate cluster {kafka} ({len(planned.brokers)} broker(s), id "
        f"{planned.cluster_id}) to KRaft with controller(s) {planned.voters}",
        soft_wrap=True,
    )
    render.out.print(f"  who: {trust.shape}", soft_wrap=True)
    if secret is not None:
        render.out.print(
            f"  its secret: {secret} (mode 600; the plan names it; keep them together)",
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


def _load(
    app: AppContext, plan_file: Path, broker_command: str | None, controller_command: str | None
) -> tuple[KRaftPlan, KRaftOperator]:
    """The plan, checked against the configuration, and who restarts the nodes (the
    operator's command templates, or the sandbox): all local checks, before anything is
    contacted."""
    from kmigrate.kraft import secret as secret_file
    from kmigrate.kraft.commands import Templates
    from kmigrate.kraft.plan import parse_plan

    templates = Templates(broker_command, controller_command)
    planned = read_plan(plan_file, parse_plan)
    settings = app.settings
    settings.cluster(planned.kafka)
    for name in planned.probe_as:
        settings.cluster(name)
    if planned.sasl_user and not settings.cluster(planned.kafka).as_librdkafka().get(
        "sasl.password"
    ):
        raise ConfigError(
            f"{plan_file}: the nodes authenticate each other as {planned.sasl_user}; give its "
            f"sasl.password for cluster '{planned.kafka}' in clusters.yaml"
        )
    secret_file.read(plan_file, planned)  # the controller principal's, if it has one
    return planned, _operator(settings, planned, templates)


def _run(
    app: AppContext,
    plan_file: Path,
    command: str,
    loaded: tuple[KRaftPlan, KRaftOperator],
    timeout: float,
    until: str = PHASES[-1],
) -> None:
    from kmigrate.kraft import secret as secret_file
    from kmigrate.kraft.conversion import Run, finalize, kraft_conversion, revert, run_migration

    planned, operator = loaded
    settings = app.settings
    op = kraft_conversion(app.workspace.store, planned.kafka, render.progress)
    steps = {"migrate": run_migration, "finalize": finalize, "revert": revert}
    named = f"kraft {command} {plan_file.name}"
    cluster = settings.cluster(planned.kafka)
    with acting(op, named, lambda: app.workspace.admin(cluster)) as (admin, status):
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
                secret_file.read(plan_file, planned),
            )
        )


def _operator(settings: Settings, planned: KRaftPlan, templates: Templates) -> KRaftOperator:
    """The operator's templates when given (checked here, before anything runs), else the
    sandbox when it runs this cluster."""
    from kmigrate.kraft.commands import CommandOperator

    if templates.given:
        templates.check()
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
        "--broker-command and --controller-command (docs/how-to/zookeeper-to-kraft.md)",
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
@wait_option
@broker_command_option
@controller_command_option
@json_option
@pass_app
def migrate(
    app: AppContext,
    plan_file: Path,
    until: str,
    timeout: float,
    broker_command: str | None,
    controller_command: str | None,
    as_json: bool,
) -> None:
    """Run the plan up to every broker a KRaft broker (controllers, roll 1, dual-write,
    roll 2), one guarded step at a time; the metadata must read the same after each.
    Resumable: after any interruption, run the same command again."""
    loaded = _load(app, plan_file, broker_command, controller_command)
    _run(app, plan_file, "migrate", loaded, timeout, until)
    _print_phase(app, loaded[0], as_json)


def _print_phase(app: AppContext, planned: KRaftPlan, as_json: bool) -> None:
    """With --json, where the migration stands after a run."""
    if as_json:
        from kmigrate.kraft.conversion import kraft_conversion

        record = kraft_conversion(app.workspace.store, planned.kafka).get()
        render.print_json({"kafka": planned.kafka, "phase": record.phase if record else None})


def _decide(planned: KRaftPlan, action: str, warning: str, flags: tuple[bool, bool, bool]) -> bool:
    """Show ``warning`` (what would change), then whether to go ahead (options.confirm)."""
    dry_run, yes, as_json = flags
    if as_json:
        render.print_json({"kafka": planned.kafka, "would": action, "note": warning})
    else:
        render.out.print(warning, soft_wrap=True)
    return confirm(action, dry_run=dry_run, yes=yes)


@group.command("finalize")
@click.argument("plan_file", type=click.Path(path_type=Path))
@confirm_options
@wait_option
@broker_command_option
@controller_command_option
@json_option
@pass_app
def finalize_command(
    app: AppContext,
    plan_file: Path,
    dry_run: bool,
    yes: bool,
    timeout: float,
    broker_command: str | None,
    controller_command: str | None,
    as_json: bool,
) -> None:
    """The point of no return: the controllers restart without ZooKeeper. After it the
    cluster cannot go back to ZooKeeper mode. Goes ahead only with --yes or a "y" on a
    terminal."""
    loaded = _load(app, plan_file, broker_command, controller_command)
    planned = loaded[0]
    warning = (
        f"Finalizing cluster {planned.kafka}: its controllers stop writing ZooKeeper. This is "
        "the POINT OF NO RETURN: `kmigrate kraft revert` is impossible afterwards."
    )
    if not _decide(planned, f"finalize cluster {planned.kafka}", warning, (dry_run, yes, as_json)):
        return
    _run(app, plan_file, "finalize", loaded, timeout)
    _print_phase(app, planned, as_json)


@group.command("revert")
@click.argument("plan_file", type=click.Path(path_type=Path))
@confirm_options
@wait_option
@broker_command_option
@controller_command_option
@json_option
@pass_app
def revert_command(
    app: AppContext,
    plan_file: Path,
    dry_run: bool,
    yes: bool,
    timeout: float,
    broker_command: str | None,
    controller_command: str | None,
    as_json: bool,
) -> None:
    """Before finalization: back to ZooKeeper mode from whatever phase the migration is
    in (Kafka's revert path). Resumable like migrate. Goes ahead only with --yes or a "y"
    on a terminal."""
    loaded = _load(app, plan_file, broker_command, controller_command)
    planned = loaded[0]
    warning = (
        f"Reverting cluster {planned.kafka} to ZooKeeper mode: every broker restarts back "
        f"on ZooKeeper and the controllers {planned.voters} are deprovisioned."
    )
    action = f"revert cluster {planned.kafka} to ZooKeeper mode"
    if not _decide(planned, action, warning, (dry_run, yes, as_json)):
        return
    _run(app, plan_file, "revert", loaded, timeout)
    _print_phase(app, planned, as_json)


@group.command("status")
@cluster_flag
@json_option
@pass_app
def status(app: AppContext, cluster_name: str | None, as_json: bool) -> None:
    """The migration's phase, each broker's mode and what ZooKeeper says (nothing yet:
    an empty answer, exit 0)."""
    from kmigrate.kraft.conversion import kraft_conversion
    from kmigrate.kraft.plan import parse_plan
    from kmigrate.kraft.world import Znodes, broker_mode_direct

    kafka = require(cluster_name, "--cluster")
    settings = app.settings
    cluster = settings.cluster(kafka)
    record = kraft_conversion(app.workspace.store, kafka).get()
    if record is None:
        if as_json:
            render.print_json({"kafka": kafka, "phase": None})
        else:
            render.out.print(
                f"cluster {kafka}: no migration to KRaft yet (plan one with kraft plan)"
            )
        return
    planned = parse_plan(record.plan_yaml, "the stored plan")
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
@cluster_flag
@json_option
@pass_app
def history_command(app: AppContext, cluster_name: str | None, as_json: bool) -> None:
    """Every step of the cluster's migration to KRaft, in order."""
    from kmigrate.kraft.conversion import kraft_conversion

    kafka = require(cluster_name, "--cluster")
    app.settings.cluster(kafka)
    events = kraft_conversion(app.workspace.store, kafka).history()
    print_history(kafka, events, as_json, width=120)
