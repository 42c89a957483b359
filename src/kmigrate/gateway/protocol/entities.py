"""Small helpers over kio's message classes: build one with the fields its version has,
find the class of a nested list's items. Pure."""

from __future__ import annotations

import dataclasses
import datetime
import typing
from functools import cache
from typing import Any

from kmigrate.kafka.protocol.wire import response_type

NO_THROTTLE = datetime.timedelta(0)


@cache
def field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls))


def build(cls: type, **values: Any) -> Any:
    """``cls(**values)`` keeping only the fields this message version has."""
    names = field_names(cls)
    return cls(**{k: v for k, v in values.items() if k in names})


@cache
def item_type(cls: type, field: str) -> Any:
    """The class of the items of ``cls``'s tuple field ``field``."""
    hint = typing.get_type_hints(cls)[field]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    inner = typing.get_args(args[0]) if args and typing.get_args(args[0]) else args
    return inner[0]


def response_class_of(request: Any) -> Any:
    return response_type(type(request).__api_key__, type(request).__version__)
