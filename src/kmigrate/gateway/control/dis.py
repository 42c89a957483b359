"""The DIS stream API's vocabulary (seed 000's gateway serves DIS clients): streams are
routed topics, partition ids are ``shardId-0000000003`` or ``3``, a record's sequence
number is its virtual offset, and a partition cursor is a signed, stateless position,
so any gateway instance accepts any instance's cursor, and a cursor taken before a
partition migrated reads on after it (the offsets it names did not change). Pure.

    cursor = base64url(json {"s": stream, "p": partition, "o": next offset}) "." base64url(hmac)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from enum import StrEnum

from kmigrate.errors import ConfigError

_SHARD = re.compile(r"^(?:shardId-)?(\d{1,10})$")


class CursorType(StrEnum):
    AT_SEQUENCE_NUMBER = "AT_SEQUENCE_NUMBER"
    AFTER_SEQUENCE_NUMBER = "AFTER_SEQUENCE_NUMBER"
    TRIM_HORIZON = "TRIM_HORIZON"
    LATEST = "LATEST"
    AT_TIMESTAMP = "AT_TIMESTAMP"


class BadRequest(ConfigError):
    """A DIS request that names something wrong (answered 400, one line)."""


def parse_partition(value: str) -> int:
    found = _SHARD.match(value or "")
    if not found:
        raise BadRequest(f"partition id '{value}': give shardId-0000000003 or 3")
    return int(found.group(1))


def shard_id(partition: int) -> str:
    return f"shardId-{partition:010d}"


@dataclass(frozen=True)
class Cursor:
    stream: str
    partition: int
    offset: int  # the next record's sequence number


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign(cursor: Cursor, secret: bytes) -> str:
    body = json.dumps(
        {"s": cursor.stream, "p": cursor.partition, "o": cursor.offset}, separators=(",", ":")
    ).encode()
    mac = hmac.new(secret, body, hashlib.sha256).digest()[:16]
    return f"{_b64(body)}.{_b64(mac)}"


def verify(text: str, secret: bytes) -> Cursor:
    """The cursor ``text`` names; BadRequest if it was not issued by this gateway."""
    try:
        head, _, tail = text.partition(".")
        body, mac = _unb64(head), _unb64(tail)
        expected = hmac.new(secret, body, hashlib.sha256).digest()[:16]
        if not hmac.compare_digest(mac, expected):
            raise ValueError("signature")
        fields = json.loads(body)
        return Cursor(str(fields["s"]), int(fields["p"]), int(fields["o"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise BadRequest("partition-cursor is not one this gateway issued") from exc
