"""Which copier a link runs (pure)."""

from __future__ import annotations

import pytest

from kmigrate.errors import ConfigError
from kmigrate.mirror.copier import BYTES, RECORDS, choose

PLAIN = {"bootstrap.servers": "127.0.0.1:9092"}
SCRAM = {**PLAIN, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512"}
TLS = {**PLAIN, "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}


def test_auto_copies_bytes_over_plaintext_sasl_and_tls() -> None:
    tls = {**SCRAM, "security.protocol": "SASL_SSL"}
    chosen = choose("auto", {"a": PLAIN, "b": tls}, {})
    assert chosen.kind == BYTES
    assert chosen.describe() == "copying record batches as bytes"


@pytest.mark.parametrize(
    ("clusters", "producer", "why"),
    [
        ({"a": PLAIN, "b": TLS}, {}, "cluster 'b' logs in with SASL OAUTHBEARER"),
        ({"a": {**SCRAM, "sasl.mechanism": "GSSAPI"}, "b": PLAIN}, {}, "SASL GSSAPI"),
        ({"a": PLAIN, "b": PLAIN}, {"compression.type": "zstd"}, "compression.type"),
    ],
)
def test_auto_falls_back_to_records_and_says_why(clusters: dict, producer: dict, why: str) -> None:
    chosen = choose("auto", clusters, producer)
    assert chosen.kind == RECORDS and why in chosen.describe()
    with pytest.raises(ConfigError, match="--copy bytes cannot be used") as refused:
        choose("bytes", clusters, producer)
    assert why in str(refused.value)


def test_records_when_asked() -> None:
    assert choose("records", {"a": PLAIN}, {}).kind == RECORDS
    with pytest.raises(ConfigError, match="--copy must be one of"):
        choose("fast", {"a": PLAIN}, {})
