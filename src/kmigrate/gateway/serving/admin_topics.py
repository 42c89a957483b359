"""CreateTopics, DeleteTopics and CreatePartitions, as the gateway answers them.

* CreateTopics: a new topic is made on the cluster the routing table's default route
  names (`kmigrate gateway route default --cluster C`), on the group home too (committed
  offsets live there), and routed to the default cluster with the same compare-and-set
  `gateway route set` uses. Without a default route it is refused (POLICY_VIOLATION,
  saying so). Replica assignments name backend brokers clients never see: refused.
* DeleteTopics: deleted on every cluster holding its records (its routes, the origins of
  moves not aged yet) and on the group home (Kafka drops a deleted topic's committed
  offsets), then its route removed. Refused while one of its partitions is being moved
  (REASSIGNMENT_IN_PROGRESS).
* CreatePartitions: on the topic's cluster and the group home; refused when its
  partitions are on more than one cluster (POLICY_VIOLATION) or with replica
  assignments. The routing table is written again (unchanged) so every instance learns
  the new partition count at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.gateway.control.placement import topic_id
from kmigrate.gateway.control.routes import RoutingTable
from kmigrate.gateway.protocol.backend import BackendUnavailable
from kmigrate.gateway.protocol.entities import NO_THROTTLE, build, item_type, response_class_of
from kmigrate.gateway.serving import offsets_home
from kmigrate.gateway.serving.state import State

log = logging.getLogger("kmigrate.gateway.admin")
Refusal = tuple[ErrorCode, str]
NO_DEFAULT = (
    "no default route: topics created through the kmigrate gateway are made on the cluster "
    "`kmigrate gateway route default --cluster CLUSTER` names, and none is set"
)
NO_ASSIGNMENTS = (
    "replica assignments would name backend brokers, which clients of the kmigrate gateway "
    "do not see; give a partition count (and replication factor) instead"
)


# ---------------------------------------------------------------- the rules (pure)


def check_create(topic: Any, table: RoutingTable, clusters: Sequence[str]) -> Refusal | None:
    """Why ``topic`` (a CreateTopics item) cannot be created, or None. Pure."""
    if table.default is None:
        return ErrorCode.policy_violation, NO_DEFAULT
    if table.default not in clusters:
        return ErrorCode.policy_violation, (
            f"the default route names cluster '{table.default}', which this gateway "
            "instance does not know (clusters.yaml)"
        )
    if topic.name in table.topics:
        return ErrorCode.topic_already_exists, f"Topic '{topic.name}' already exists."
    if topic.assignments:
        return ErrorCode.invalid_replica_assignment, NO_ASSIGNMENTS
    return None


def check_delete(name: str, table: RoutingTable) -> Refusal | None:
    """Why topic ``name`` cannot be deleted, or None. Pure."""
    route = table.topics.get(name)
    if route is None:
        return ErrorCode.unknown_topic_or_partition, f"Topic '{name}' does not exist."
    moving = sorted(p for p in route.migrations if route.migrating(p) is not None)
    if moving:
        return ErrorCode.reassignment_in_progress, (
            f"partition(s) {', '.join(map(str, moving))} of topic '{name}' are being moved "
            "between clusters (`kmigrate gateway migrate`); delete it once the move is done"
        )
    return None


def check_partitions(topic: Any, table: RoutingTable) -> Refusal | None:
    """Why partitions cannot be added to ``topic`` (a CreatePartitions item). Pure."""
    route = table.topics.get(topic.name)
    if route is None:
        return ErrorCode.unknown_topic_or_partition, f"Topic '{topic.name}' does not exist."
    if topic.assignments:
        return ErrorCode.invalid_replica_assignment, NO_ASSIGNMENTS
    if len(route.clusters()) > 1:
        return ErrorCode.policy_violation, (
            f"the partitions of topic '{topic.name}' live on clusters "
            f"{', '.join(sorted(route.clusters()))}; the gateway adds partitions only to a "
            "topic on one cluster (move them together first)"
        )
    return None


# ---------------------------------------------------------------- CreateTopics


async def create_topics(state: State, body: Any) -> Any:
    table = await state.routes_naming(t.name for t in body.topics)
    refused = {
        t.name: r for t in body.topics if (r := check_create(t, table, list(state.backends)))
    }
    asked = [t for t in body.topics if t.name not in refused]
    answers: dict[str, Any] = {}
    if asked:
        cluster = str(table.default)
        request = dataclasses.replace(body, topics=tuple(asked))
        answer = await _call(state, cluster, request)
        if isinstance(answer, str):
            refused |= {t.name: (ErrorCode.request_timed_out, answer) for t in asked}
        else:
            answers = {a.name: a for a in answer.topics}
            if not body.validate_only:
                refused |= await _made(state, cluster, asked, answers)
    item_cls = item_type(response_class_of(body), "topics")
    items = tuple(_created_item(item_cls, t, answers.get(t.name), refused.get(t.name))
                  for t in body.topics)  # fmt: skip
    return build(response_class_of(body), throttle_time=NO_THROTTLE, topics=items)


async def _made(
    state: State, cluster: str, asked: list[Any], answers: dict[str, Any]
) -> dict[str, Refusal]:
    """The topics ``cluster`` created, given their group home copy and their route; what
    went wrong per topic."""
    problems: dict[str, Refusal] = {}
    made = []
    for topic in asked:
        answer = answers.get(topic.name)
        if answer is None:
            continue
        if answer.error_code == ErrorCode.topic_already_exists:
            problems[topic.name] = (ErrorCode.topic_already_exists, (
                f"Topic '{topic.name}' already exists on cluster {cluster} but is not routed "
                f"through the gateway; route it with `kmigrate gateway route set --topic "
                f"{topic.name} --cluster {cluster}`"
            ))  # fmt: skip
        elif answer.error_code == ErrorCode.none:
            made.append(topic)
    for topic in made:
        count = await offsets_home.count_of(state, cluster, topic, answers[topic.name])
        await offsets_home.learned(state.backends[cluster], topic.name, count or 1)
        trouble = await offsets_home.ensure(state, cluster, topic.name, count)
        if trouble is not None:
            problems[topic.name] = (ErrorCode.policy_violation, trouble)
    routed = [t.name for t in made if t.name not in problems]
    if routed:
        trouble = await edit_routes(state, lambda t: _with_routes(t, routed, cluster))
        for n in routed if trouble else ():
            problems[n] = (ErrorCode.unknown_server_error, (
                f"created on {cluster} but not routed ({trouble}); route it with "
                f"`kmigrate gateway route set --topic {n} --cluster {cluster}`"
            ))  # fmt: skip
    return problems


def _with_routes(table: RoutingTable, names: list[str], cluster: str) -> RoutingTable:
    for name in names:
        if name not in table.topics:
            table = table.with_route(name, cluster)
    return table


def _created_item(item_cls: type, topic: Any, answer: Any, refused: Refusal | None) -> Any:
    if refused is not None:
        code, message = refused
        return build(
            item_cls,
            name=topic.name,
            topic_id=None,
            error_code=code,
            error_message=message,
            topic_config_error_code=0,
            num_partitions=-1,
            replication_factor=-1,
            configs=None,
        )
    return dataclasses.replace(answer, **_gateway_id(answer, topic.name))


def _gateway_id(item: Any, name: str) -> dict[str, Any]:
    """The topic id clients are told: the gateway's, never a backend's."""
    if getattr(item, "topic_id", None) is None or item.error_code != ErrorCode.none:
        return {}
    return {"topic_id": topic_id(name)}


# ---------------------------------------------------------------- DeleteTopics


async def delete_topics(state: State, body: Any) -> Any:
    table = await state.routes_naming(getattr(body, "topic_names", None) or (
        t.name for t in getattr(body, "topics", ()) if t.name
    ))  # fmt: skip
    asked = _names_to_delete(body, table)
    refused: dict[str, Refusal] = {n: r for n in asked if n and (r := check_delete(n, table))}
    wanted = [n for n in asked if n and n not in refused]
    where: dict[str, list[str]] = {}
    for name in wanted:
        for cluster in sorted(table.holders(name) | {state.group_home.name}):
            where.setdefault(cluster, []).append(name)
    clusters = list(where)
    answers = await asyncio.gather(*(_delete_on(state, c, body, where[c]) for c in clusters))
    for outcome in answers:
        for name, problem in outcome.items():
            refused.setdefault(name, problem)
    gone = [n for n in wanted if n not in refused]
    if gone:
        trouble = await edit_routes(state, lambda t: _without(t, gone))
        refused |= {n: (ErrorCode.unknown_server_error, f"deleted, but its route stays: {trouble}")
                    for n in gone if trouble}  # fmt: skip
    return _deleted_answer(body, asked, refused)


def _names_to_delete(body: Any, table: RoutingTable) -> list[str | None]:
    """The topic names a DeleteTopics request names, by name or (v6) by id; None for
    an id no routed topic has."""
    if hasattr(body, "topic_names"):
        return [str(n) for n in body.topic_names]
    ids = {topic_id(n): n for n in table.topics}
    return [t.name if t.name else ids.get(t.topic_id) for t in body.topics]


async def _delete_on(state: State, cluster: str, body: Any, names: list[str]) -> dict[str, Refusal]:
    """``names`` deleted on ``cluster``; the topics it could not delete (a topic it never
    had counts as deleted)."""
    request = _delete_request(body, names)
    answer = await _call(state, cluster, request)
    if isinstance(answer, str):
        return {n: (ErrorCode.request_timed_out, answer) for n in names}
    problems = {}
    for item in answer.responses:
        if item.error_code not in (ErrorCode.none, ErrorCode.unknown_topic_or_partition):
            why = getattr(item, "error_message", None) or item.error_code.name
            problems[str(item.name)] = (item.error_code, f"on cluster {cluster}: {why}")
    return problems


def _delete_request(body: Any, names: list[str]) -> Any:
    if hasattr(body, "topic_names"):
        return dataclasses.replace(body, topic_names=tuple(names))
    state_cls: Any = item_type(body.__class__, "topics")
    return dataclasses.replace(body, topics=tuple(state_cls(name=n, topic_id=None) for n in names))


def _without(table: RoutingTable, names: list[str]) -> RoutingTable:
    for name in names:
        if name in table.topics:
            table = table.without(name)
    return table


def _deleted_answer(body: Any, asked: list[str | None], refused: dict[str, Refusal]) -> Any:
    reply = response_class_of(body)
    item_cls = item_type(reply, "responses")
    ids = [None] * len(asked) if hasattr(body, "topic_names") else [t.topic_id for t in body.topics]
    items = []
    for name, asked_id in zip(asked, ids, strict=True):
        if name is None:
            code, message = ErrorCode.unknown_topic_id, f"no topic has id {asked_id}"
        else:
            code, message = refused.get(name, (ErrorCode.none, None))  # type: ignore[assignment]
        items.append(build(
            item_cls, name=name, topic_id=topic_id(name) if name else asked_id,
            error_code=code, error_message=message,
        ))  # fmt: skip
    return build(reply, throttle_time=NO_THROTTLE, responses=tuple(items))


# ---------------------------------------------------------------- CreatePartitions


async def create_partitions(state: State, body: Any) -> Any:
    table = await state.routes_naming(t.name for t in body.topics)
    refused = {t.name: r for t in body.topics if (r := check_partitions(t, table))}
    by_cluster: dict[str, list[Any]] = {}
    for topic in body.topics:
        if topic.name not in refused:
            by_cluster.setdefault(table.topics[topic.name].cluster, []).append(topic)
    for cluster, topics in by_cluster.items():
        refused |= await _grow(state, cluster, body, topics)
    grown = [t for t in body.topics if t.name not in refused]
    if grown and not body.validate_only:
        await edit_routes(state, lambda t: t)  # every instance learns the new counts
    reply = response_class_of(body)
    item_cls = item_type(reply, "results")
    items = tuple(
        build(item_cls, name=t.name, error_code=refused.get(t.name, (ErrorCode.none, None))[0],
              error_message=refused.get(t.name, (ErrorCode.none, None))[1])
        for t in body.topics
    )  # fmt: skip
    return build(reply, throttle_time=NO_THROTTLE, results=items)


async def _grow(state: State, cluster: str, body: Any, topics: list[Any]) -> dict[str, Refusal]:
    """``topics`` given their new partition counts on ``cluster``, then on the group
    home; what went wrong per topic."""
    answer = await _call(state, cluster, dataclasses.replace(body, topics=tuple(topics)))
    if isinstance(answer, str):
        return {t.name: (ErrorCode.request_timed_out, answer) for t in topics}
    problems: dict[str, Refusal] = {
        r.name: (r.error_code, r.error_message or r.error_code.name)
        for r in answer.results
        if r.error_code != ErrorCode.none
    }
    if body.validate_only:
        return problems
    for topic in topics:
        if topic.name not in problems:
            await offsets_home.learned(state.backends[cluster], topic.name, int(topic.count))
            trouble = await offsets_home.grow(state, cluster, topic, body)
            if trouble is not None:
                problems[topic.name] = (ErrorCode.policy_violation, trouble)
    return problems


# ---------------------------------------------------------------- shared steps


async def _call(state: State, cluster: str, body: Any) -> Any:
    """``body`` answered by ``cluster``'s controller, or why not (a string)."""
    if cluster in state.routes.shielded:
        return f"cluster {cluster} is shielded (`kmigrate gateway unshield {cluster}`)"
    try:
        return await state.backends[cluster].call_controller(body)
    except BackendUnavailable as exc:
        return f"cluster {cluster} does not answer: {exc}"


async def edit_routes(state: State, change: Callable[[RoutingTable], RoutingTable]) -> str | None:
    """The routing table changed in ZooKeeper (compare-and-set) and served at once by
    this instance; why not, or None."""
    if state.edit_routes is None:
        return "this gateway instance cannot write the routing table"
    try:
        new = await asyncio.to_thread(state.edit_routes, change)
    except Exception as exc:
        log.warning("could not change the routing table: %s", exc)
        return str(exc)
    state.follow(new)
    return None
