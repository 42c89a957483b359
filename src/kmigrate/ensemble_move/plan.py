"""The ZooKeeper move's plan: which target servers join when, the phases in order, and
the guards each step checks. Pure: views in, plan (or a one-line refusal) out.

The order rules (seed 003, done with dynamic reconfiguration instead of firewalls):

* **Join** adds at most ``len(source voters) - 1`` target servers as voters, so the
  source's own voters stay a majority of the joint ensemble: whatever happens to the
  new hosts, the source keeps its quorum. The other target servers join the target
  ensemble after the split.
* **Check** compares Kafka's tree on a source and a target server.
* **Switch** restarts the brokers one at a time with the target connect string, the
  controller last.
* **Split** removes the source voters from the joint ensemble (the target servers that
  joined keep a quorum of their own), adds the remaining target servers, and restarts
  the source servers as an ensemble of their own with the full data.
* **Clean up** is a separate command, after a grace period.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from kmigrate.config import read_user_file
from kmigrate.documents import validated, yaml_mapping
from kmigrate.ensemble_move.members import connect_string, keeps_majority, voters
from kmigrate.ensemble_move.model import EnsembleView, KafkaOnZk
from kmigrate.errors import ConfigError, ConflictError

PLAN_KIND = "kmigrate-zookeeper-move"
HEADER = """\
# kmigrate ZooKeeper move plan. Review it, then:  kmigrate zk migrate {path}
# Nothing has changed yet. Members and connect strings are what the ensembles showed.
"""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PlannedEnsemble(_Strict):
    name: str
    connect: str
    members: list[str]  # dynamic-configuration lines
    config_version: str | None = None


class Step(_Strict):
    phase: str  # join | check | switch | split
    action: str
    guard: str


class ZkMovePlan(_Strict):
    kind: str = PLAN_KIND
    kafka: str
    cluster_id: str | None = None  # the cluster it was written for
    chroot: str
    source: PlannedEnsemble
    target: PlannedEnsemble
    join_first: list[int]  # target servers that join the source ensemble as voters
    join_after_split: list[int]  # target servers that join once the source has left
    brokers: list[int]
    broker_hosts: dict[int, str] = Field(default_factory=dict)  # for --restart-command
    target_connect: str = Field(description="Kafka's zookeeper.connect after the switch")
    steps: list[Step]

    def to_yaml(self, path: str = "plan.yaml") -> str:
        body = self.model_dump(mode="json")
        return HEADER.format(path=path) + yaml.safe_dump(body, sort_keys=False, width=100)


def plan_move(
    source: EnsembleView, target: EnsembleView, kafka: KafkaOnZk, chroot: str
) -> ZkMovePlan:
    """The plan to move ``kafka`` (under ``chroot``) from ``source`` to ``target``, or a
    ConflictError naming what to fix first."""
    _check_ensembles(source, target)
    _check_kafka(source, kafka, chroot)
    source_voters = voters(source.members)
    target_ids = [m.node_id for m in voters(target.members)]
    # Join as many as keep the source's voters a majority (k < n), the rest later.
    first = target_ids[: len(source_voters) - 1]
    later = target_ids[len(first) :]
    assert keeps_majority(len(source_voters), len(first))
    target_connect = connect_string(target.members) + chroot
    steps = [
        Step(
            phase="join",
            action=f"start target server(s) {_ids(first)} with an empty data folder, "
            f"following the source ensemble; reconfig joining={_ids(first)}",
            guard="source ensemble at the planned config version, every source server "
            f"serving, target empty; after: all {len(source_voters) + len(first)} servers "
            "at the same last zxid",
        ),
        Step(
            phase="check",
            action=f"compare Kafka's tree under {chroot} on a source and a target server",
            guard="same znode paths, data and ACLs (counts and digest); a difference stops",
        ),
        Step(
            phase="switch",
            action=f"restart brokers {_ids(kafka.broker_ids)} one at a time with "
            f"zookeeper.connect={target_connect}, the controller last",
            guard="before each: every broker registered, no under-replicated partition; "
            "after each: the broker registered again",
        ),
        Step(
            phase="split",
            action=f"reconfig leaving={_ids(m.node_id for m in source_voters)}; "
            + (f"reconfig joining={_ids(later)}; " if later else "")
            + "restart the source servers as an ensemble of their own",
            guard="Kafka's brokers all on the target; after: each side answers for its "
            "own members only, Kafka's tree on the target equals what Kafka last wrote",
        ),
    ]
    return ZkMovePlan(
        kafka=kafka.name,
        cluster_id=kafka.cluster_id,
        chroot=chroot,
        source=_planned(source),
        target=_planned(target),
        join_first=first,
        join_after_split=later,
        brokers=list(kafka.broker_ids),
        broker_hosts=dict(kafka.hosts or {}),
        target_connect=target_connect,
        steps=steps,
    )


def _check_ensembles(source: EnsembleView, target: EnsembleView) -> None:
    for side, view in (("source", source), ("target", target)):
        if not view.members:
            raise ConflictError(
                f"{side} ensemble '{view.name}' shows no dynamic configuration "
                "(/zookeeper/config): it needs ZooKeeper 3.5+ with reconfigEnabled=true"
            )
        down = [i for i, mode in sorted(view.modes.items()) if mode is None]
        if down:
            raise ConflictError(
                f"{side} ensemble '{view.name}': server(s) {_ids(down)} do not serve; "
                "bring them back first"
            )
    if target.user_paths:
        raise ConflictError(
            f"target ensemble '{target.name}' is not empty (it holds /"
            f"{', /'.join(target.user_paths)}); a move replaces its data: use an empty "
            "ensemble"
        )
    clash = sorted(set(source.ids) & set(target.ids))
    if clash:
        raise ConflictError(
            f"server id(s) {_ids(clash)} exist in both ensembles; the target's servers join "
            "the source's, so their ids (myid) must differ"
        )
    source_voters = len(voters(source.members))
    if source_voters < 3:
        raise ConflictError(
            f"source ensemble '{source.name}' has {source_voters} voter(s): joining any "
            "target server would make it lose its own majority; grow it to 3 first"
        )
    if not voters(target.members):
        raise ConflictError(f"target ensemble '{target.name}' has no voting server")


def _check_kafka(source: EnsembleView, kafka: KafkaOnZk, chroot: str) -> None:
    source_hosts = set(source.connect.split(","))
    for broker, connect in sorted(kafka.zookeeper_connect.items()):
        hosts, _, path = connect.partition("/")
        if f"/{path}".rstrip("/") != chroot.rstrip("/") or not set(hosts.split(",")) & (
            source_hosts | {m.client_address for m in source.members}
        ):
            raise ConflictError(
                f"broker {broker} of cluster '{kafka.name}' uses zookeeper.connect "
                f"{connect}, not the source ensemble '{source.name}' with chroot {chroot}"
            )
    missing = sorted(set(kafka.broker_ids) - set(kafka.registered))
    if missing:
        raise ConflictError(
            f"broker(s) {_ids(missing)} of cluster '{kafka.name}' are not registered under "
            f"{chroot}/brokers/ids on '{source.name}'; every broker must be up first"
        )


def _planned(view: EnsembleView) -> PlannedEnsemble:
    return PlannedEnsemble(
        name=view.name,
        connect=view.connect,
        members=[m.line() for m in view.members],
        config_version=view.config_version,
    )


def _ids(ids: object) -> str:
    return ",".join(str(i) for i in ids)  # type: ignore[attr-defined]


def parse_plan(text: str, where: str) -> ZkMovePlan:
    raw = yaml_mapping(text, where, "not a ZooKeeper move plan (write one with `kmigrate zk plan`)")
    if raw.get("kind") != PLAN_KIND:
        raise ConfigError(f"{where}: not a ZooKeeper move plan (write one with `kmigrate zk plan`)")
    return validated(ZkMovePlan, raw, where)


def load_plan(path: Path) -> ZkMovePlan:
    return parse_plan(read_user_file(path, "plan"), str(path))
