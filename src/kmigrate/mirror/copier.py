"""Which of the mirror's two copiers a link runs, and why: record batches as bytes (the
default: fetched and produced unchanged, only the producer identity rewritten), or
record by record through librdkafka (when the target must get records changed, or a
cluster logs in with a SASL mechanism kmigrate's own connections do not speak:
GSSAPI, OAUTHBEARER). Pure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kmigrate.codec import batch_merge
from kmigrate.errors import ConfigError

AUTO, BYTES, RECORDS = "auto", "bytes", "records"
CHOICES = (AUTO, BYTES, RECORDS)
_OWN_PROTOCOLS = {"PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL"}
_OWN_MECHANISMS = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
# Producer settings that change what the target stores (the byte copy keeps the
# source's batches as they are).
_RECORD_CHANGING = ("compression.type", "compression.codec", "message.timestamp.type")


@dataclass(frozen=True)
class Copier:
    kind: str  # BYTES or RECORDS
    reason: str

    def describe(self) -> str:
        if self.kind == BYTES:
            if not batch_merge.NATIVE:
                return (
                    "copying record batches as bytes (small batches merged in Python, ~6x "
                    "slower: kmigrate.codec._shift was not built; reinstall kmigrate where a "
                    "C compiler is)"
                )
            return "copying record batches as bytes"
        return f"copying record by record ({self.reason})"


def choose(
    asked: str,
    clusters: Mapping[str, Mapping[str, Any]],
    producer: Mapping[str, Any],
) -> Copier:
    """The copier for ``asked`` (auto, bytes or records) given the librdkafka settings
    of the link's ``clusters`` (name -> settings) and the producer settings the user
    gave. ``bytes`` asked for where it cannot run is a ConfigError naming why."""
    if asked not in CHOICES:
        raise ConfigError(f"--copy must be one of {', '.join(CHOICES)}, not {asked!r}")
    if asked == RECORDS:
        return Copier(RECORDS, "--copy records")
    reason = _why_not_bytes(clusters, producer)
    if reason is None:
        return Copier(BYTES, "")
    if asked == BYTES:
        raise ConfigError(f"--copy bytes cannot be used: {reason}; use --copy records")
    return Copier(RECORDS, reason)


def _why_not_bytes(
    clusters: Mapping[str, Mapping[str, Any]], producer: Mapping[str, Any]
) -> str | None:
    changing = [key for key in _RECORD_CHANGING if key in producer]
    if changing:
        return f"the producer settings change the records ({', '.join(changing)})"
    for name, conf in clusters.items():
        protocol = str(conf.get("security.protocol", "PLAINTEXT")).upper()
        if protocol not in _OWN_PROTOCOLS:
            return f"cluster '{name}' is reached over {protocol}"
        mechanism = str(conf.get("sasl.mechanism", "PLAIN")).upper()
        if protocol.startswith("SASL") and mechanism not in _OWN_MECHANISMS:
            return f"cluster '{name}' logs in with SASL {mechanism}, which the byte copy lacks"
    return None
