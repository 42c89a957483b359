"""The REST API's reference, from the OpenAPI document of `kmigrate serve`'s app: one
section per path and method (its parameters, request body and responses), then the
request bodies' fields, then the HTTP status each kind of refusal answers with."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tools.docs.markdown import cell, code, heading, prose, table
from tools.docs.schema_words import default_of, type_of

Schema = dict[str, Any]
METHODS = ("get", "put", "post", "patch", "delete")
# FastAPI's own validation answer: the app answers malformed requests differently (a
# one-line refusal, below), so its schemas are not part of kmigrate's API.
FASTAPI_VALIDATION = {"HTTPValidationError", "ValidationError"}


def openapi_document() -> Schema:
    """The OpenAPI document of `kmigrate serve`, built without serving and without any
    cluster: the app over an empty in-memory store, closed again."""
    from pydantic import SecretStr

    from kmigrate.config import Settings, StoreConfig
    from kmigrate.serve.app import create_app

    app = create_app(Settings(store=StoreConfig(url=SecretStr("sqlite://"))))
    try:
        return app.openapi()
    finally:
        app.state.served.sampler.close()
        app.state.served.store.close()


def operations(document: Schema) -> Iterator[tuple[str, str, Schema]]:
    """Every (METHOD, path, operation) of the document, in the document's order."""
    for path, item in document.get("paths", {}).items():
        for method in METHODS:
            if method in item:
                yield method.upper(), path, item[method]


def anchor(method: str, path: str) -> str:
    """A section's anchor: ``get-api-links-name`` for GET /api/links/{name}."""
    words = "".join(c if c.isalnum() else " " for c in f"{method} {path}".lower())
    return "-".join(words.split())


def render(document: Schema) -> str:
    """The whole reference: operations, request bodies, refusals' statuses (if given)."""
    parts = [render_operation(m, p, op) for m, p, op in operations(document)]
    schemas = document.get("components", {}).get("schemas", {})
    bodies = [
        render_schema(name, s) for name, s in schemas.items() if name not in FASTAPI_VALIDATION
    ]
    if bodies:
        parts += [heading(2, "Request bodies", "request-bodies"), *bodies]
    return "\n\n".join(parts) + "\n"


def render_operation(method: str, path: str, operation: Schema) -> str:
    """One operation's section: what it does, parameters, body, responses."""
    parts = [
        heading(2, code(f"{method} {path}"), anchor(method, path)),
        prose(operation.get("description") or operation.get("summary")),
    ]
    params = operation.get("parameters", [])
    if params:
        parts.append(table(["Parameter", "In", "Type", "Default", "Description"], _params(params)))
    body = operation.get("requestBody")
    if body:
        parts.append("Request body: " + _content(body))
    responses = [
        [code(status), cell(answer.get("description", "")), _content(answer)]
        for status, answer in operation.get("responses", {}).items()
        if not _is_validation(answer)
    ]
    parts.append(table(["Status", "Answer", "Body"], responses))
    return "\n\n".join(part for part in parts if part)


def _params(params: list[Schema]) -> list[list[str]]:
    return [
        [
            code(p["name"]),
            p["in"],
            cell(type_of(p.get("schema", {}), _link)),
            cell(default_of(p.get("schema", {}), p.get("required", False))),
            cell(p.get("description", "")),
        ]
        for p in params
    ]


def _content(holder: Schema) -> str:
    """The media types of a body and their schemas, in words."""
    shown = [
        f"{code(media)} {cell(type_of(body.get('schema', {}), _link))}".strip()
        for media, body in holder.get("content", {}).items()
    ]
    return "; ".join(shown) or "none"


def _is_validation(answer: Schema) -> bool:
    refs = [b.get("schema", {}).get("$ref", "") for b in answer.get("content", {}).values()]
    return any(ref.rsplit("/", 1)[-1] in FASTAPI_VALIDATION for ref in refs)


def _link(name: str) -> str:
    return f"[{code(name)}](#{name.lower()})"


def render_schema(name: str, schema: Schema) -> str:
    """A request body's section: what it is, and a row per field."""
    required = set(schema.get("required", []))
    rows = [
        [
            code(key),
            cell(type_of(prop, _link)),
            cell(default_of(prop, key in required)),
            cell(prop.get("description", "")),
        ]
        for key, prop in schema.get("properties", {}).items()
    ]
    parts = [
        heading(3, code(name), name.lower()),
        prose(schema.get("description")),
        table(["Field", "Type", "Default", "Description"], rows),
    ]
    return "\n\n".join(part for part in parts if part)


def refusal_statuses() -> list[tuple[int, list[str]]]:
    """Each HTTP status a refusal answers with and the error kinds (codes) that get it,
    as `kmigrate serve` maps them."""
    from kmigrate.serve.api import status_of
    from tools.docs.exit_codes import error_classes

    by_status: dict[int, list[str]] = {}
    for kind in error_classes():
        by_status.setdefault(status_of(kind.__new__(kind)), []).append(kind.code)
    return sorted(by_status.items())


def render_refusals(statuses: list[tuple[int, list[str]]]) -> str:
    """The table of refusals: status, and the kinds that answer with it."""
    rows = [[code(str(status)), ", ".join(code(k) for k in kinds)] for status, kinds in statuses]
    return table(["Status", "Error kinds (`kind` in the answer)"], rows)
