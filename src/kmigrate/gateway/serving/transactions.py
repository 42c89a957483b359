"""The transactional APIs, as the gateway answers them.

Transactions run on the group home (kmigrate.gateway.control.transactions says why):

* FindCoordinator for a transactional id names the instance asked
  (kmigrate.gateway.serving.groups); every instance forwards the transactional APIs to
  the id's transaction coordinator on the group home, found with FindCoordinator there.
* InitProducerId with a transactional id (groups.init_producer_id), AddOffsetsToTxn and
  EndTxn go to that coordinator unchanged: the producer id and epoch are the group
  home's own, and the producer's batches reach the group home unchanged.
* TxnOffsetCommit goes to the group's coordinator on the group home, as OffsetCommit.
* AddPartitionsToTxn names the partitions a transaction will write. A partition routed
  to another backend is refused with INVALID_TXN_STATE (the other partitions of the
  request: OPERATION_NOT_ATTEMPTED), and a warning in the gateway's log names the
  transactional id, the partition, its cluster and why (v0-v3, the versions clients
  send, carry no error message). A partition whose writes a move fences waits like a
  write does, then gets CONCURRENT_TRANSACTIONS (retriable); the request counts as a
  write in flight, so a fence is acknowledged only once every partition added before it
  is known to the coordinator (where the move looks for open transactions).
* A Produce with a transactional id to a partition on another backend is refused with
  INVALID_TXN_STATE and the reason as its error message (a client never gets there
  without AddPartitionsToTxn; the check keeps a transaction from spanning backends
  whatever the client does).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.gateway.control.transactions import elsewhere, refusal
from kmigrate.gateway.protocol.entities import (
    NO_THROTTLE,
    build,
    field_names,
    item_type,
    response_class_of,
)
from kmigrate.gateway.serving import split
from kmigrate.gateway.serving.groups import TRANSACTION, to_coordinator
from kmigrate.gateway.serving.messages import ProducePartition, ProduceRequest, ProduceResponse
from kmigrate.gateway.serving.state import State

log = logging.getLogger("kmigrate.gateway.transactions")
APIS = {24, 25, 26, 28}  # AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit


async def answer(state: State, api_key: int, body: Any) -> Any:
    """The answer to a request of one of the APIS."""
    if api_key == 24:
        return await add_partitions(state, body)
    if api_key == 28:  # offsets committed inside a transaction, by the group's coordinator
        return await to_coordinator(state, body.group_id, body)
    return await to_coordinator(state, body.transactional_id, body, TRANSACTION)


async def add_partitions(state: State, body: Any) -> Any:
    """AddPartitionsToTxn (v0-v3): forwarded when every partition lives on the group
    home and none is fenced; refused for a transaction that would span backends."""
    txn = body.v3_and_below_transactional_id
    keys = [(t.name, int(p)) for t in body.v3_and_below_topics for p in t.partitions]
    await state.fences.admit(keys)
    home = state.group_home.name
    outside = elsewhere(state.routes, home, keys)
    if outside:
        log.warning("%s", refusal(txn, home, outside))
        return _answer(body, {k: ErrorCode.invalid_txn_state for k in outside})
    unknown = [k for k in keys if k[0] not in state.routes.topics]
    if unknown:
        return _answer(body, {k: ErrorCode.unknown_topic_or_partition for k in unknown})
    fenced = [k for k in keys if state.fences.fenced(k)]
    if fenced:  # a move still holds them: the client retries shortly
        return _answer(body, {k: ErrorCode.concurrent_transactions for k in fenced})
    with state.fences.writing(keys):
        return await to_coordinator(state, txn, body, TRANSACTION)


def _answer(body: Any, codes: dict[tuple[str, int], ErrorCode]) -> Any:
    """An AddPartitionsToTxn answer: ``codes`` for their partitions, every other
    partition not attempted."""
    reply = response_class_of(body)
    topic_type = item_type(reply, "results_by_topic_v3_and_below")
    partition_type = item_type(topic_type, "results_by_partition")
    return build(
        reply,
        throttle_time=NO_THROTTLE,
        results_by_topic_v3_and_below=tuple(
            build(
                topic_type,
                name=t.name,
                results_by_partition=tuple(
                    build(
                        partition_type,
                        partition_index=p,
                        partition_error_code=codes.get(
                            (t.name, int(p)), ErrorCode.operation_not_attempted
                        ),
                    )
                    for p in t.partitions
                ),
            )
            for t in body.v3_and_below_topics
        ),
    )


async def refused_produce(state: State, body: ProduceRequest) -> ProduceResponse | None:
    """The answer to a transactional Produce that would write outside the group home
    (every partition refused, the reason as the error message); None: it may go on."""
    assert body.transactional_id is not None
    home = state.group_home.name
    keys = [(t.name, int(p.index)) for t in body.topic_data for p in t.partition_data]
    outside = elsewhere(state.routes, home, keys)
    if not outside:
        return None
    message = refusal(body.transactional_id, home, outside)
    log.warning("%s", message)
    reply_type = split.reply_partition_type(split.PRODUCE, body)

    def refuse(_topic: str, item: ProducePartition) -> split.Local:
        reply = split.PRODUCE.error(reply_type, int(item.index), ErrorCode.invalid_txn_state)
        if "error_message" in field_names(reply_type):  # Produce v8 and later
            reply = dataclasses.replace(reply, error_message=message)
        return split.Local(reply)

    return await split.produce(body, refuse, state.send)
