"""`--from POSITION`: where to start in every partition, checked before any cluster is
contacted.

    earliest | latest           the log start or end
    @EPOCH_MS or EPOCH_MS       the first record at or after that time (milliseconds)
    2026-11-23T10:00:00Z        the same, as an ISO 8601 time (UTC unless it names a zone)
    FILE.json                   offsets per partition (commands that accept one say so)

`check_position` returns the spelling the domain takes: earliest, latest, @EPOCH_MS or the
file's path (an existing file wins over a time of the same spelling).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from kmigrate.errors import ConfigError

MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


def check_position(
    text: str, flag: str = "--from", *, latest: bool = True, files: bool = False
) -> str:
    """``text`` as earliest, latest, @EPOCH_MS or an existing file's path; one line naming
    ``flag`` and the accepted forms otherwise."""
    if text == "earliest" or (latest and text == "latest"):
        return text
    ms = None if files and Path(text).is_file() else _epoch_ms(text)
    if ms is not None:
        return f"@{ms}"
    if files and Path(text).is_file():
        return text
    if files and text.endswith(".json"):
        raise ConfigError(f"{flag} file '{_short(text)}' does not exist")
    raise ConfigError(f"{flag} '{_short(text)}' is not a position: {_forms(latest, files)}")


def _epoch_ms(text: str) -> int | None:
    digits = text[1:] if text.startswith("@") else text
    if digits.isdigit():
        ms = int(digits)
    else:
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        ms = int(when.timestamp() * 1000)
    if not 0 <= ms <= MAX_MS:
        raise ConfigError(f"position '{_short(text)}' is not a time kmigrate can look up")
    return ms


def _forms(latest: bool, files: bool) -> str:
    forms = ["earliest", *(["latest"] if latest else []), "@EPOCH_MS", "an ISO time"]
    if files:
        forms.append("a FILE.json")
    return ", ".join(forms[:-1]) + " or " + forms[-1]


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."
