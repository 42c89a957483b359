"""A Schema Registry over Confluent's REST API: what kmigrate reads and writes there.

Only the calls a copy, a comparison and verify need. Every answer is checked and turned
into kmigrate's values; every failure into one line of kmigrate's errors, naming the
cluster the registry belongs to and the request, never a credential (basic-auth
credentials travel in a header, never in the URL).
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kmigrate.config import ClusterConfig
from kmigrate.errors import (
    AuthenticationError,
    AuthorizationError,
    ClusterUnreachableError,
    ConfigError,
    RegistryRefusedError,
)
from kmigrate.model.schemas import Reference, Schema, SchemaVersion

# Confluent's error codes for "no such thing" (subject, version, schema, subject-level
# compatibility, subject-level mode).
_ABSENT = {40401, 40402, 40403, 40408, 40409}
_READERS = 8  # concurrent requests when reading many versions one by one


class SchemaRegistry:
    """The registry a cluster's clients use (``ClusterConfig.schema_registry``)."""

    def __init__(self, cluster: ClusterConfig) -> None:
        if cluster.schema_registry is None:
            raise ConfigError(
                f"cluster '{cluster.name}' names no schema_registry in the configuration; "
                "add schema_registry: {url: ...} under it"
            )
        self.cluster = cluster.name
        self.config = cluster.schema_registry
        self.url = self.config.url
        self._headers = {"Accept": "application/vnd.schemaregistry.v1+json, application/json"}
        if self.config.basic_auth_user_info is not None:
            token = base64.b64encode(self.config.basic_auth_user_info.get_secret_value().encode())
            self._headers["Authorization"] = f"Basic {token.decode()}"
        self._tls = (
            ssl.create_default_context(cafile=self.config.ca_file)
            if self.url.startswith("https://")
            else None
        )

    # ------------------------------------------------------------ reading

    def versions(self) -> list[SchemaVersion]:
        """Every version of every subject, soft-deleted ones included and marked."""
        every = self._listed(deleted=True)
        if every is None:  # a registry without GET /schemas: subject by subject
            return self._versions_one_by_one()
        live = {(v.subject, v.version) for v in self._listed(deleted=False) or ()}
        return sorted(
            (v if (v.subject, v.version) in live else _with_deleted(v) for v in every),
            key=lambda v: (v.subject, v.version),
        )

    def schema(self, schema_id: int) -> Schema | None:
        """The schema registered under ``schema_id`` (None: no such id)."""
        found = self._get(f"/schemas/ids/{schema_id}")
        return None if found is None else _schema(found)

    def schemas(self, ids: Iterable[int]) -> dict[int, Schema | None]:
        """The schema of each id (None: the registry has no such id)."""
        wanted = sorted(set(ids))
        with ThreadPoolExecutor(_READERS) as pool:
            return dict(zip(wanted, pool.map(self.schema, wanted), strict=True))

    def compatibility(self, subject: str | None = None) -> str | None:
        """The global compatibility level, or a subject's own (None: not set)."""
        path = "/config" if subject is None else f"/config/{_quoted(subject)}"
        found = self._get(path)
        if found is None:
            return None
        return str(found.get("compatibilityLevel") or found.get("compatibility") or "") or None

    def mode(self, subject: str | None = None) -> str | None:
        """The global mode, or a subject's own (None: not set)."""
        path = "/mode" if subject is None else f"/mode/{_quoted(subject)}"
        found = self._get(path)
        return None if found is None else str(found.get("mode") or "") or None

    def subjects(self) -> list[str]:
        """Every subject, soft-deleted ones included."""
        return sorted(self._get("/subjects?deleted=true") or [])

    # ------------------------------------------------------------ writing

    def register(self, version: SchemaVersion) -> int:
        """Register ``version`` under its own id and version number (the subject must be
        in IMPORT mode); the id the registry answers with."""
        body: dict[str, Any] = {
            "schema": version.schema.text,
            "id": version.id,
            "version": version.version,
        }
        if version.schema.schema_type != "AVRO":
            body["schemaType"] = version.schema.schema_type
        if version.schema.references:
            body["references"] = [
                {"name": r.name, "subject": r.subject, "version": r.version}
                for r in version.schema.references
            ]
        answer = self._send("POST", f"/subjects/{_quoted(version.subject)}/versions", body)
        return int(answer["id"])

    def delete_version(self, subject: str, version: int) -> None:
        """Soft-delete one version (its id keeps resolving)."""
        self._send("DELETE", f"/subjects/{_quoted(subject)}/versions/{version}", None)

    def set_compatibility(self, level: str, subject: str | None = None) -> None:
        path = "/config" if subject is None else f"/config/{_quoted(subject)}"
        self._send("PUT", path, {"compatibility": level})

    def set_mode(self, mode: str | None, subject: str) -> None:
        """A subject's own mode (None: remove it, so the global mode applies). ``force``
        lets IMPORT be set on a subject that already has versions."""
        path = f"/mode/{_quoted(subject)}"
        if mode is None:
            self._send("DELETE", path, None, absent_ok=True)
        else:
            self._send("PUT", f"{path}?force=true", {"mode": mode})

    # ------------------------------------------------------------ HTTP

    def _listed(self, *, deleted: bool) -> list[SchemaVersion] | None:
        found = self._get(f"/schemas?deleted={'true' if deleted else 'false'}")
        if found is None:
            return None
        return [_version(item) for item in found]

    def _versions_one_by_one(self) -> list[SchemaVersion]:
        subjects = self.subjects()
        with ThreadPoolExecutor(_READERS) as pool:
            numbers = list(pool.map(self._version_numbers, subjects))
            wanted = [(s, v, d) for s, found in zip(subjects, numbers, strict=True)
                      for v, d in found]  # fmt: skip
            read = pool.map(lambda w: self._one_version(*w), wanted)
            return [v for v in read if v is not None]

    def _version_numbers(self, subject: str) -> list[tuple[int, bool]]:
        every = self._get(f"/subjects/{_quoted(subject)}/versions?deleted=true") or []
        live = set(self._get(f"/subjects/{_quoted(subject)}/versions") or [])
        return [(int(v), v not in live) for v in every]

    def _one_version(self, subject: str, number: int, deleted: bool) -> SchemaVersion | None:
        flag = "?deleted=true" if deleted else ""
        found = self._get(f"/subjects/{_quoted(subject)}/versions/{number}{flag}")
        if found is None:
            return None
        version = _version(found)
        return _with_deleted(version) if deleted else version

    def _get(self, path: str) -> Any:
        """The JSON answer, or None when the registry has no such thing."""
        return self._send("GET", path, None, absent_ok=True)

    def _send(self, method: str, path: str, body: Any, *, absent_ok: bool = False) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = dict(self._headers)
        if data is not None:
            headers["Content-Type"] = "application/vnd.schemaregistry.v1+json"
        request = urllib.request.Request(self.url + path, data, headers, method=method)
        where = f"the schema registry of cluster '{self.cluster}' ({self.url})"
        try:
            with urllib.request.urlopen(
                request, timeout=self.config.timeout_s, context=self._tls
            ) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            return self._refused(exc, method, path, where, absent_ok)
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ClusterUnreachableError(
                f"cannot reach {where}: {reason}",
                cluster=self.cluster,
                condition="schema registry unreachable",
            ) from None
        return json.loads(text) if text.strip() else None

    def _refused(
        self, exc: urllib.error.HTTPError, method: str, path: str, where: str, absent_ok: bool
    ) -> None:
        try:
            detail = json.loads(exc.read() or b"{}")
        except ValueError:
            detail = {}
        code = detail.get("error_code") if isinstance(detail, dict) else None
        if absent_ok and exc.code == 404:
            return None
        if absent_ok and code in _ABSENT:
            return None
        if exc.code == 401:
            raise AuthenticationError(f"{where} refused kmigrate's credentials (HTTP 401)")
        if exc.code == 403:
            raise AuthorizationError(f"{where} does not allow {method} {_shown(path)} (HTTP 403)")
        message = str(detail.get("message", "")) if isinstance(detail, dict) else ""
        raise RegistryRefusedError(
            f"{where} refused {method} {_shown(path)}: HTTP {exc.code}"
            + (f", error {code}" if code else "")
            + (f": {message[:200]}" if message else ""),
            status=exc.code,
            error_code=code if isinstance(code, int) else None,
        )


def _quoted(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _shown(path: str) -> str:
    return urllib.parse.unquote(path.partition("?")[0])


def _schema(found: dict[str, Any]) -> Schema:
    return Schema(
        str(found.get("schemaType") or "AVRO"),
        str(found["schema"]),
        tuple(
            Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
            for r in found.get("references") or ()
        ),
    )


def _version(found: dict[str, Any]) -> SchemaVersion:
    return SchemaVersion(
        str(found["subject"]), int(found["version"]), int(found["id"]), _schema(found)
    )


def _with_deleted(version: SchemaVersion) -> SchemaVersion:
    return SchemaVersion(version.subject, version.version, version.id, version.schema, True)
