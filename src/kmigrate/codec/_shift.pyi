"""kmigrate.codec.batch_merge's inner loop, in C (_shift.c)."""

def shifted(
    records: bytes | memoryview, count: int, shift_ts: int, shift_offset: int, /
) -> bytes: ...
