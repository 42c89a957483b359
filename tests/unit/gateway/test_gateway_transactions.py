"""Transactions through the gateway, pure parts: which partitions of a transaction live
off the group home, the refusal a client's AddPartitionsToTxn and Produce get for them,
which open transactions cover the partitions a move fences, and the refusal naming
them."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from kio.schema.add_partitions_to_txn.v3.request import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.static.primitive import Records

from kmigrate.config import ClusterConfig
from kmigrate.gateway.control.placement import Instance
from kmigrate.gateway.control.routes import RoutingTable
from kmigrate.gateway.control.transactions import (
    OpenTransaction,
    covering,
    elsewhere,
    refusal,
    still_open,
)
from kmigrate.gateway.protocol.backend import Backend
from kmigrate.gateway.serving import transactions
from kmigrate.gateway.serving.dispatch import Gateway

ROUTES = RoutingTable().with_route("in", "home").with_route("out", "home").with_route("far", "src")
SPLIT = ROUTES.with_route("out", "src", partitions=[1])


def test_a_transaction_stays_on_the_group_home() -> None:
    keys = [("in", 0), ("out", 0), ("out", 1), ("far", 2), ("unrouted", 0)]
    assert elsewhere(ROUTES, "home", keys) == {("far", 2): "src"}
    assert elsewhere(SPLIT, "home", keys) == {("out", 1): "src", ("far", 2): "src"}
    assert elsewhere(SPLIT, "home", [("in", 0), ("out", 0)]) == {}
    assert elsewhere(SPLIT, "src", [("in", 0), ("far", 0)]) == {("in", 0): "home"}


def test_the_refusal_names_the_transaction_the_partition_its_cluster_and_why() -> None:
    said = refusal("tx-7", "home", {("out", 1): "src", ("far", 2): "src"})
    assert said.startswith("transaction 'tx-7' refused: far[2] is on cluster 'src', ")
    assert "out[1] is on cluster 'src'" in said
    assert "run on the group home 'home' only" in said
    assert "atomic across two clusters" in said


def _txn(tid: str, *keys: tuple[str, int]) -> OpenTransaction:
    return OpenTransaction(tid, 5, "Ongoing", frozenset(keys))


def test_a_move_waits_for_exactly_the_transactions_covering_its_partitions() -> None:
    open_now = [
        _txn("a", ("t", 0), ("t", 1), ("u", 2)),
        _txn("b", ("t", 1)),
        _txn("c", ("u", 0)),
        _txn("d"),  # ongoing, nothing added yet
    ]
    assert covering(open_now, "t", [0, 1, 2]) == {0: ["a"], 1: ["a", "b"]}
    assert covering(open_now, "t", [2]) == {}
    assert covering(open_now, "u", [0, 2]) == {0: ["c"], 2: ["a"]}
    assert covering([], "t", [0]) == {}
    said = still_open("t", {0: ["a"], 1: ["a", "b"]}, 3)
    assert said.startswith("open transactions did not end within 3s (t[0]: transactional id 'a'")
    assert "t[1]: transactional id 'a', 'b'" in said
    assert "never splits a transaction" in said


def _gateway(routes: RoutingTable) -> Gateway:
    backends = {
        name: Backend(ClusterConfig(name=name, bootstrap_servers="127.0.0.1:1"), "test")
        for name in ("home", "src")
    }
    gateway = Gateway("gw", Instance(1, "127.0.0.1", 9092), backends, "home")
    gateway.routes = routes
    return gateway


def test_add_partitions_across_backends_is_refused_without_asking_any_backend() -> None:
    request = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="tx-1",
        v3_and_below_producer_id=7,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=(
            AddPartitionsToTxnTopic(name="out", partitions=(0, 1)),
            AddPartitionsToTxnTopic(name="ghost", partitions=(0,)),
        ),
    )
    answer = asyncio.run(transactions.answer(_gateway(SPLIT), 24, request))
    codes = {
        (t.name, int(p.partition_index)): p.partition_error_code
        for t in answer.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }
    assert codes == {
        ("out", 0): ErrorCode.operation_not_attempted,
        ("out", 1): ErrorCode.invalid_txn_state,
        ("ghost", 0): ErrorCode.operation_not_attempted,
    }
    # only unrouted: retriable, as a broker answers for a topic it does not know
    alone = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="tx-1",
        v3_and_below_producer_id=7,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=(AddPartitionsToTxnTopic(name="ghost", partitions=(0,)),),
    )
    answer = asyncio.run(transactions.answer(_gateway(SPLIT), 24, alone))
    (topic,) = answer.results_by_topic_v3_and_below
    (result,) = topic.results_by_partition
    assert result.partition_error_code == ErrorCode.unknown_topic_or_partition


def test_a_transactional_produce_off_the_home_is_refused_with_the_reason() -> None:
    def request(topic: str, partition: int) -> ProduceRequest:
        data = PartitionProduceData(index=partition, records=Records(b""))
        return ProduceRequest(
            transactional_id="tx-2",
            acks=-1,
            timeout=timedelta(seconds=30),
            topic_data=(TopicProduceData(name=topic, partition_data=(data,)),),
        )

    gateway = _gateway(SPLIT)
    answer = asyncio.run(transactions.refused_produce(gateway, request("out", 1)))
    assert answer is not None
    (reply,) = answer.responses[0].partition_responses
    assert reply.error_code == ErrorCode.invalid_txn_state and reply.base_offset == -1
    assert reply.error_message is not None
    assert reply.error_message.startswith("transaction 'tx-2' refused: out[1] is on cluster 'src'")
    assert asyncio.run(transactions.refused_produce(gateway, request("out", 0))) is None
