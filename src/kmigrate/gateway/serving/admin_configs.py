"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs, as the gateway answers them.

Each config resource goes where it lives:

* a topic: described by the cluster it is routed to; altered on every cluster that
  holds records of it (its routes, and the origins of its moves not aged yet), so a
  retention change holds for every record clients can read;
* a broker: the gateway's instances stand for brokers. Describing one (its id a live
  instance's, or "" for the cluster-wide defaults) answers the group home's broker
  configs, with the entries that would name a backend broker (its id, listeners,
  controller and ZooKeeper addresses) made the instance's or left out. Altering broker
  configs is refused (POLICY_VIOLATION): they are each backend's own;
* a group's configs: the group home;
* broker loggers, client metrics: refused (POLICY_VIOLATION), with the reason.

A cluster that does not answer fails only its resources (REQUEST_TIMED_OUT, naming it).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.gateway.control.placement import Instance
from kmigrate.gateway.control.routes import RoutingTable
from kmigrate.gateway.protocol.backend import BackendUnavailable
from kmigrate.gateway.protocol.entities import NO_THROTTLE, build, item_type, response_class_of
from kmigrate.gateway.serving.state import State

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
DESCRIBE_CONFIGS = 32
_IDENTITY = {"broker.id", "node.id"}
_LISTENERS = {"listeners", "advertised.listeners"}
_HIDDEN_PREFIXES = ("controller.quorum.", "zookeeper.connect", "bootstrap.servers")
_NOT_REACHABLE = {
    BROKER_LOGGER: "backend brokers' loggers are not reachable through the kmigrate gateway; "
    "change them on the backend",
    CLIENT_METRICS: "client metrics subscriptions are not served by the kmigrate gateway; "
    "set them on the backend",
}


@dataclass(frozen=True)
class Refused:
    code: ErrorCode
    message: str


@dataclass(frozen=True)
class Sent:
    """A resource asked of ``clusters`` (on ``broker`` of the one cluster, when named)
    under the name ``name`` there; ``instance``: the gateway instance a broker
    resource stands for (its entries are made that instance's)."""

    clusters: tuple[str, ...]
    name: str
    broker: int | None = None
    instance: Instance | None = None
    standing_in: bool = False  # a broker resource: entries sanitized


Where = Refused | Sent


def place_describe(
    resource: Any, routes: RoutingTable, home: str, instances: Sequence[Instance], home_broker: int
) -> Where:
    """Where a DescribeConfigs resource is answered. Pure."""
    kind, name = int(resource.resource_type), str(resource.resource_name)
    if kind == TOPIC:
        route = routes.topics.get(name)
        if route is None:
            return _unknown_topic(name)
        return Sent((route.cluster,), name)
    if kind == BROKER:
        if name == "":
            return Sent((home,), "", standing_in=True)
        instance = next((i for i in instances if str(i.node_id) == name), None)
        if instance is None:
            live = ", ".join(str(i.node_id) for i in instances)
            return Refused(
                ErrorCode.invalid_request,
                f"no gateway instance has broker id {name} (live instances: {live})",
            )
        return Sent((home,), str(home_broker), home_broker, instance, standing_in=True)
    if kind == GROUP:
        return Sent((home,), name)
    return _not_reachable(kind)


def place_alter(resource: Any, routes: RoutingTable, home: str) -> Where:
    """Where an (incremental) AlterConfigs resource is applied. Pure."""
    kind, name = int(resource.resource_type), str(resource.resource_name)
    if kind == TOPIC:
        if name not in routes.topics:
            return _unknown_topic(name)
        return Sent(tuple(sorted(routes.holders(name))), name)
    if kind == BROKER:
        return Refused(
            ErrorCode.policy_violation,
            "broker configs are each backend cluster's own: the kmigrate gateway does not "
            "change them; alter them on the backend",
        )
    if kind == GROUP:
        return Sent((home,), name)
    return _not_reachable(kind)


def _unknown_topic(name: str) -> Refused:
    return Refused(
        ErrorCode.unknown_topic_or_partition,
        f"topic '{name}' does not exist (it is not routed through the gateway)",
    )


def _not_reachable(kind: int) -> Refused:
    return Refused(
        ErrorCode.policy_violation,
        _NOT_REACHABLE.get(kind, f"config resources of type {kind} are not served by the gateway"),
    )


def sanitized(entries: Sequence[Any], instance: Instance | None) -> tuple[Any, ...]:
    """A backend broker's config entries as the gateway instance's: its id and
    listeners in place of the backend's, backend addresses left out. Pure."""
    kept = []
    for entry in entries:
        value = _instance_value(entry.name, entry.value, instance)
        if value is _DROP:
            continue
        changes: dict[str, Any] = {"value": value}
        if getattr(entry, "synonyms", None):
            changes["synonyms"] = tuple(
                dataclasses.replace(s, value=v)
                for s in entry.synonyms
                if (v := _instance_value(s.name, s.value, instance)) is not _DROP
            )
        kept.append(dataclasses.replace(entry, **changes))
    return tuple(kept)


_DROP: Any = object()


def _instance_value(name: str, value: str | None, instance: Instance | None) -> Any:
    if name.startswith(_HIDDEN_PREFIXES):
        return _DROP
    if name in _IDENTITY:
        return _DROP if instance is None else str(instance.node_id)
    if name in _LISTENERS:
        return _DROP if instance is None else f"PLAINTEXT://{instance.host}:{instance.port}"
    return value


# ---------------------------------------------------------------- answering


async def describe_configs(state: State, body: Any) -> Any:
    home = state.group_home
    home_broker = min(home.view.brokers, default=-1)
    instances = state.live_instances()
    routes = await state.routes_naming(_topics(body))
    places = [place_describe(r, routes, home.name, instances, home_broker) for r in body.resources]
    return await _answer(state, body, places, "results")


async def alter_configs(state: State, body: Any) -> Any:
    """AlterConfigs and IncrementalAlterConfigs (the same shape)."""
    routes = await state.routes_naming(_topics(body))
    places = [place_alter(r, routes, state.group_home.name) for r in body.resources]
    return await _answer(state, body, places, "responses")


def _topics(body: Any) -> list[str]:
    return [r.resource_name for r in body.resources if int(r.resource_type) == TOPIC]


async def _answer(state: State, body: Any, places: list[Where], results: str) -> Any:
    """Each resource asked where ``places`` says, the answers in the request's order."""
    by_target: dict[tuple[str, int | None], list[int]] = {}
    for n, where in enumerate(places):
        if isinstance(where, Sent):
            for cluster in where.clusters:
                by_target.setdefault((cluster, where.broker), []).append(n)
    targets = list(by_target)
    answers = await asyncio.gather(
        *(_ask(state, body, t, [(body.resources[n], places[n]) for n in by_target[t]])
          for t in targets)
    )  # fmt: skip
    found: dict[int, list[tuple[str, Any]]] = {}
    for target, answer in zip(targets, answers, strict=True):
        for n, item in zip(by_target[target], answer, strict=True):
            found.setdefault(n, []).append((target[0], item))
    item_cls = item_type(response_class_of(body), results)
    items = tuple(
        _merged(item_cls, resource, where, found.get(n, []))
        for n, (resource, where) in enumerate(zip(body.resources, places, strict=True))
    )
    return build(response_class_of(body), throttle_time=NO_THROTTLE, **{results: items})


async def _ask(
    state: State, body: Any, target: tuple[str, int | None], asked: list[tuple[Any, Where]]
) -> list[Any]:
    """The backend's answer item per resource of ``asked`` (an error item each when the
    cluster does not answer)."""
    cluster, broker = target
    resources = tuple(
        dataclasses.replace(r, resource_name=w.name) for r, w in asked if isinstance(w, Sent)
    )
    request = dataclasses.replace(body, resources=resources)
    backend = state.backends[cluster]
    results = "results" if type(body).__api_key__ == DESCRIBE_CONFIGS else "responses"
    try:
        if cluster in state.routes.shielded:
            raise BackendUnavailable(f"cluster {cluster} is shielded")
        answer = await (
            backend.call_any(request) if broker is None else backend.call_broker(broker, request)
        )
    except BackendUnavailable as exc:
        item_cls = item_type(response_class_of(body), results)
        return [
            _error(item_cls, r, ErrorCode.request_timed_out, f"cluster {cluster}: {exc}")
            for r, _ in asked
        ]
    answered = {(int(i.resource_type), i.resource_name): i for i in getattr(answer, results)}
    item_cls = item_type(response_class_of(body), results)
    return [
        answered.get((int(r.resource_type), r.resource_name))
        or _error(item_cls, r, ErrorCode.unknown_server_error, f"cluster {cluster} left it out")
        for r in resources
    ]


def _merged(item_cls: type, resource: Any, where: Where, found: list[tuple[str, Any]]) -> Any:
    if isinstance(where, Refused):
        return _error(item_cls, resource, where.code, where.message)
    failed = [(c, item) for c, item in found if item.error_code != ErrorCode.none]
    if failed:
        cluster, item = failed[0]
        done = [c for c, i in found if i.error_code == ErrorCode.none]
        message = f"on cluster {cluster}: {item.error_message or item.error_code.name}"
        if done:
            message += f" (applied on {', '.join(done)})"
        return _error(item_cls, resource, item.error_code, message)
    item = found[0][1]
    changes: dict[str, Any] = {"resource_name": resource.resource_name}
    if where.standing_in and hasattr(item, "configs"):
        changes["configs"] = sanitized(item.configs, where.instance)
    return dataclasses.replace(item, **changes)


def _error(item_cls: type, resource: Any, code: ErrorCode, message: str) -> Any:
    return build(
        item_cls,
        error_code=code,
        error_message=message,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
        configs=(),
    )
