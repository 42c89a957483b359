"""DescribeAcls, CreateAcls and DeleteAcls, as the gateway answers them: refused with
SECURITY_DISABLED, Kafka's answer of a broker without an authorizer, and a message
saying why. The gateway does not authorize its clients by ACLs; each backend's ACLs
apply to the gateway's own principal there, and are described and changed on the
backend itself."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from kmigrate.gateway.protocol.entities import NO_THROTTLE, build, item_type, response_class_of

WHY = (
    "the kmigrate gateway does not authorize its clients with ACLs; the backends' ACLs "
    "apply to the gateway's own principal: describe and change them on each backend"
)


def refuse(body: Any) -> Any:
    """The refusal, in the shape of the request's answer."""
    reply = response_class_of(body)
    api = type(body).__api_key__
    if api == 29:  # DescribeAcls
        return build(
            reply,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.security_disabled,
            error_message=WHY,
            resources=(),
        )
    field, count = (
        ("results", len(body.creations)) if api == 30 else ("filter_results", len(body.filters))
    )
    item = item_type(reply, field)
    refused = build(
        item, error_code=ErrorCode.security_disabled, error_message=WHY, matching_acls=()
    )
    return build(reply, throttle_time=NO_THROTTLE, **{field: (refused,) * count})
