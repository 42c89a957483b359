"""TLS on the gateway's client listener: the server's SSL context from PEM files, and the
principal of a client certificate (mTLS), named as Kafka names it by default:
``User:`` and the subject's distinguished name in RFC 2253 form (``CN=alice,O=Example``).
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from typing import Any, Literal

from kmigrate.errors import ConfigError

ClientAuth = Literal["none", "requested", "required"]
_VERIFY = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_SHORT = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def server_context(
    cert_file: str,
    key_file: str,
    key_password: str | None = None,
    ca_file: str | None = None,
    client_auth: ClientAuth = "none",
) -> ssl.SSLContext:
    """A TLS 1.2+ server context; with ``client_auth`` other than none, client
    certificates are verified against ``ca_file``. Errors are one line naming the file
    (never the key's password)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert_file, key_file, password=key_password or None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"gateway clients tls: cannot load certificate {cert_file} with key {key_file}: "
            f"{_reason(exc)}"
        ) from None
    if client_auth != "none":
        if ca_file is None:
            raise ConfigError("gateway clients tls: client_auth needs ca_file to verify with")
        try:
            context.load_verify_locations(cafile=ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"gateway clients tls: cannot load ca_file {ca_file}: {_reason(exc)}"
            ) from None
    context.verify_mode = _VERIFY[client_auth]
    return context


def principal_of(certificate: dict[str, Any] | None) -> str | None:
    """``User:<subject DN>`` of a verified client certificate (None without one)."""
    if not certificate or not certificate.get("subject"):
        return None
    return f"User:{distinguished_name(certificate['subject'])}"


def distinguished_name(subject: Sequence[Sequence[tuple[str, str]]]) -> str:
    """RFC 2253: the most specific RDN first, special characters escaped."""
    return ",".join(
        "+".join(f"{_SHORT.get(k, k)}={_escape(v)}" for k, v in rdn) for rdn in reversed(subject)
    )


def _escape(value: str) -> str:
    out = "".join(f"\\{c}" if c in ',+"\\<>;=' else c for c in value)
    if out.startswith(("#", " ")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _reason(exc: Exception) -> str:
    if isinstance(exc, ssl.SSLError):
        return str(exc.reason or exc).lower().replace("_", " ")
    return str(getattr(exc, "strerror", None) or exc)
