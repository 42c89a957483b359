"""What the gateway reads of the four APIs it splits by partition (Produce, Fetch,
ListOffsets, OffsetForLeaderEpoch), whichever version a client speaks: kio generates a
class per version; these protocols name the fields every supported version has, so the
API families are type-checked against them. Pure: types only.
"""

from __future__ import annotations

import datetime
from dataclasses import Field
from typing import Any, ClassVar, Protocol

from kio.schema.errors import ErrorCode
from kio.static.primitive import Records


class Message(Protocol):
    """A kio message: a frozen dataclass (``dataclasses.replace`` applies)."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]


# ---------------------------------------------------------------- Produce (api 0, v3-v9)


class ProducePartition(Message, Protocol):
    @property
    def index(self) -> int: ...
    @property
    def records(self) -> Records | None: ...


class ProduceTopic(Message, Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partition_data(self) -> tuple[ProducePartition, ...]: ...


class ProduceRequest(Message, Protocol):
    @property
    def transactional_id(self) -> str | None: ...
    @property
    def acks(self) -> int: ...
    @property
    def topic_data(self) -> tuple[ProduceTopic, ...]: ...


class ProducePartitionResponse(Message, Protocol):
    @property
    def index(self) -> int: ...
    @property
    def error_code(self) -> ErrorCode: ...
    @property
    def base_offset(self) -> int: ...


class ProduceTopicResponse(Message, Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partition_responses(self) -> tuple[ProducePartitionResponse, ...]: ...


class ProduceResponse(Message, Protocol):
    @property
    def responses(self) -> tuple[ProduceTopicResponse, ...]: ...


# ---------------------------------------------------------------- Fetch (api 1, v4-v12)


class FetchRequest(Message, Protocol):
    @property
    def max_wait(self) -> datetime.timedelta: ...


class FetchPartitionResponse(Message, Protocol):
    @property
    def partition_index(self) -> int: ...
    @property
    def error_code(self) -> ErrorCode: ...
    @property
    def high_watermark(self) -> int: ...


class FetchTopicResponse(Message, Protocol):
    @property
    def topic(self) -> str: ...
    @property
    def partitions(self) -> tuple[FetchPartitionResponse, ...]: ...


class FetchResponse(Message, Protocol):
    @property
    def responses(self) -> tuple[FetchTopicResponse, ...]: ...


# ---------------------------------------------------------------- ListOffsets (api 2, v1-v7)


class ListOffsetsPartition(Message, Protocol):
    @property
    def partition_index(self) -> int: ...
    @property
    def timestamp(self) -> int: ...


class ListOffsetsTopic(Message, Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> tuple[ListOffsetsPartition, ...]: ...


class ListOffsetsRequest(Message, Protocol):
    @property
    def topics(self) -> tuple[ListOffsetsTopic, ...]: ...


class ListOffsetsPartitionResponse(Message, Protocol):
    @property
    def partition_index(self) -> int: ...
    @property
    def error_code(self) -> ErrorCode: ...


class ListOffsetsTopicResponse(Message, Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> tuple[ListOffsetsPartitionResponse, ...]: ...


class ListOffsetsResponse(Message, Protocol):
    @property
    def topics(self) -> tuple[ListOffsetsTopicResponse, ...]: ...


# ------------------------------------------------------ OffsetForLeaderEpoch (api 23, v2-v4)


class LeaderEpochRequest(Message, Protocol):
    """Passed through by partition; the gateway reads nothing else of it."""


class LeaderEpochResponse(Message, Protocol):
    """Merged by partition; the gateway reads nothing else of it."""
