"""A topic listed, then deleted before it was described (the gateway deleting an aged
origin while a caller looks): `describe_topics_if_present` says it is not there, as it
would have a moment later, instead of failing with topic-not-found."""

from __future__ import annotations

from typing import Any

from kmigrate.errors import TopicNotFoundError
from kmigrate.kafka.admin.topics import Topics


class _Deleting(Topics):
    """Lists `gone` once more after it was deleted, as metadata may."""

    def __init__(self) -> None:
        self.listed = 0

    def list_topics(self, *, include_internal: bool = False) -> list[Any]:
        self.listed += 1
        names = ["kept", "gone"] if self.listed == 1 else ["kept"]
        return [type("T", (), {"name": n})() for n in names]

    def describe_topics(self, names: list[str]) -> list[Any]:
        if "gone" in names:
            raise TopicNotFoundError("topic 'gone' does not exist on cluster 'c'")
        return list(names)


def test_a_topic_deleted_between_listing_and_describing_is_absent() -> None:
    topics = _Deleting()
    assert topics.describe_topics_if_present(["kept", "gone"]) == ["kept"]
    assert topics.listed == 2
