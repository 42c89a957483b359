"""verify's schema check: which ids records carry, first offset per partition, and how
each resolves on the two registries (pure; the digest pass on fake consumer messages)."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import TIMESTAMP_CREATE_TIME

from kmigrate.model.schemas import Schema, framed_id
from kmigrate.verify.fingerprint import DigestTask, _Digest
from kmigrate.verify.ranges import Span
from kmigrate.verify.schema_ids import (
    DIFFERENT,
    MISSING,
    ONLY_TARGET,
    SAME,
    UNKNOWN,
    SchemaUse,
    judge,
    uses_by_id,
)


@dataclass
class Message:
    """What the digest pass reads of a confluent-kafka message."""

    _offset: int
    _key: bytes | None
    _value: bytes | None

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def timestamp(self) -> tuple[int, int]:
        return TIMESTAMP_CREATE_TIME, 1_700_000_000_000

    def headers(self) -> None:
        return None


def framed(schema_id: int, body: bytes = b"\x02ab") -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + body


def test_the_digest_pass_notes_each_ids_first_offset_for_keys_and_values():
    task = DigestTask("target", {}, "orders", 0, Span(10, 16), schema_ids=True)
    digest = _Digest(task)
    digest.add([Message(10, b"plain key", framed(7)), Message(11, framed(3), framed(7))])
    digest.add([Message(12, None, framed(8)), Message(13, b"\x00\x01", None)])
    digest.add([Message(14, None, b"\x00\x00\x00\x00\x07"), Message(15, None, b"")])
    assert digest.result().schema_ids == {(7, "value"): 10, (3, "key"): 11, (8, "value"): 12}
    plain = _Digest(DigestTask("target", {}, "orders", 0, Span(10, 12)))
    plain.add([Message(10, None, framed(7))])
    assert plain.result().schema_ids == {}


def test_framed_id_reads_the_magic_byte_and_four_bytes():
    assert framed_id(framed(258)) == 258
    assert framed_id(b"\x00\x00\x00\x01") is None  # too short for an id
    assert framed_id(b"\x01\x00\x00\x00\x01") is None  # another magic byte
    assert framed_id(None) is None


def test_each_id_is_judged_against_both_registries_with_its_earliest_use():
    found = {
        ("orders", 0): {(7, "value"): 40, (9, "value"): 3},
        ("orders", 1): {(7, "value"): 12, (5, "key"): 0},
        ("audit", 0): {(6, "value"): 1, (4, "value"): 2},
    }
    uses = uses_by_id(found)
    assert uses[7] == (SchemaUse("orders", 1, 12, "value"), SchemaUse("orders", 0, 40, "value"))
    avro = Schema("AVRO", '{"type": "string"}')
    check = judge(
        uses,
        {7: avro, 9: avro, 5: avro, 6: None, 4: None},
        {7: Schema("AVRO", '{ "type":"string" }'), 9: None, 5: Schema("AVRO", '"int"'), 6: avro},
    )
    status = {r.schema_id: r.status for r in check.ids}
    assert status == {4: UNKNOWN, 5: DIFFERENT, 6: ONLY_TARGET, 7: SAME, 9: MISSING}
    assert [r.schema_id for r in check.problems] == [5, 9]
    missing = next(r for r in check.ids if r.schema_id == 9)
    assert missing.describe() == (
        "schema id 9 is not on the target's registry; first used by orders[0] value at offset 3"
    )
