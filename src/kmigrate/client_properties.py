"""Which client properties a cluster entry may hold (pure, apart from files existing).

kmigrate hands a cluster's ``properties`` to librdkafka, whose names mostly match the Java
client's but not always. Users bring configs from Java tools, so the Java-only names
(``sasl.jaas.config``, truststores, serializers, ...) are refused when clusters.yaml is
loaded, each with the librdkafka equivalent; files a property names (a CA, a certificate,
a key) must exist before any client is made. What only librdkafka knows (an unknown name,
a bad value) is translated where the client is made (:mod:`kmigrate.kafka.clients`) with
:func:`refusal`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from kmigrate.errors import ConfigError

_JAAS = (
    "sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER) with "
    "sasl.username and sasl.password"
)
_PEM_PAIR = "ssl.certificate.location + ssl.key.location (PEM files)"
_OIDC = (
    "sasl.oauthbearer.method: oidc with sasl.oauthbearer.token.endpoint.url, "
    "sasl.oauthbearer.client.id and sasl.oauthbearer.client.secret"
)
_JAVA_ONLY = "nothing: librdkafka has no such setting; remove it"

# Java client name -> what to write for librdkafka instead.
JAVA_NAMES: Mapping[str, str] = {
    "sasl.jaas.config": _JAAS,
    "sasl.login.class": _OIDC,
    "sasl.login.callback.handler.class": _OIDC,
    "sasl.client.callback.handler.class": _OIDC,
    "sasl.oauthbearer.jwks.endpoint.url": _JAVA_ONLY,
    "sasl.login.refresh.window.factor": "sasl.oauthbearer.* (librdkafka refreshes tokens itself)",
    "ssl.truststore.location": "ssl.ca.location (a PEM file of CA certificates)",
    "ssl.truststore.password": "nothing: ssl.ca.location is a PEM file without a password",
    "ssl.truststore.type": "nothing: ssl.ca.location takes a PEM file",
    "ssl.truststore.certificates": "ssl.ca.pem",
    "ssl.keystore.type": (
        f"nothing: use {_PEM_PAIR}, or ssl.keystore.location with a PKCS#12 file"
    ),
    "ssl.keystore.certificate.chain": "ssl.certificate.pem",
    "ssl.keystore.key": "ssl.key.pem",
    "ssl.protocol": "nothing: librdkafka negotiates the TLS version (ssl.cipher.suites narrows)",
    "ssl.enabled.protocols": "nothing: librdkafka negotiates the TLS version",
    "ssl.provider": _JAVA_ONLY,
    "ssl.keymanager.algorithm": _JAVA_ONLY,
    "ssl.trustmanager.algorithm": _JAVA_ONLY,
    "ssl.secure.random.implementation": _JAVA_ONLY,
    "ssl.engine.factory.class": "ssl.engine.location",
    "security.providers": _JAVA_ONLY,
    "key.serializer": "nothing: kmigrate copies bytes",
    "value.serializer": "nothing: kmigrate copies bytes",
    "key.deserializer": "nothing: kmigrate copies bytes",
    "value.deserializer": "nothing: kmigrate copies bytes",
}

# Properties naming a file librdkafka opens when the client is made.
FILE_PROPERTIES = (
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.keystore.location",
    "ssl.crl.location",
    "sasl.kerberos.keytab",
)
_NOT_FILES = {"ssl.ca.location": {"probe"}}  # librdkafka's own well-known CA locations
_JAVA_KEYSTORES = (".jks", ".keystore", ".truststore")


def java_hint(name: str) -> str | None:
    """What to write instead of a Java-client property ``name``, or None."""
    return JAVA_NAMES.get(name)


def check_names(where: str, properties: Mapping[str, object]) -> None:
    """Refuse Java-client names and Java-only values in ``properties`` (pure)."""
    for name in properties:
        hint = java_hint(name)
        if hint is not None:
            raise ConfigError(
                f"{where}: '{name}' is a Java client property; librdkafka (kmigrate's "
                f"client) takes {hint} (Java tools read java_properties)"
            )
    if properties.get("ssl.endpoint.identification.algorithm") == "":
        raise ConfigError(
            f"{where}: ssl.endpoint.identification.algorithm is empty (Java's way to turn "
            "host name checks off); librdkafka takes 'none' (or 'https')"
        )


def check_files(where: str, properties: Mapping[str, str]) -> None:
    """Each file a property names exists (relative paths: from the current folder, as
    librdkafka reads them); a Java keystore is named as such."""
    for name in FILE_PROPERTIES:
        value = properties.get(name)
        if value is None or value in _NOT_FILES.get(name, ()):
            continue
        if not Path(value).exists():
            raise ConfigError(f"{where}: {name} file {value} does not exist")
        if name == "ssl.keystore.location" and value.lower().endswith(_JAVA_KEYSTORES):
            raise ConfigError(
                f"{where}: ssl.keystore.location {value} looks like a Java keystore (JKS); "
                f"librdkafka takes a PKCS#12 file there, or {_PEM_PAIR}"
            )


_UNKNOWN = re.compile(r'No such configuration property: "([^"]+)"')
_INVALID = re.compile(
    r"(?:Invalid value .*for|cannot be set to empty value|Configuration) "
    r'.*?property "([^"]+)"'
)
_FILE_FAILED = re.compile(r"\b([a-z.]+\.(?:location|keytab)) failed: (.*)")
_CREATE_PREFIX = re.compile(r"^Failed to create [a-z ]+: ")


def refusal(where: str, message: str, properties: Mapping[str, str]) -> str:
    """One line for librdkafka's refusal ``message`` of a client config: the property or
    file it names and what to write instead; never a value (it may be a password)."""
    message = _CREATE_PREFIX.sub("", " ".join(message.split()))
    if found := _UNKNOWN.search(message):
        name = found.group(1)
        hint = java_hint(name)
        instead = f"; librdkafka takes {hint}" if hint else ""
        see = " (librdkafka's CONFIGURATION.md lists them)"
        return f"{where}: unknown client property '{name}'{instead}{see}"
    if "JAAS" in message:
        return f"{where}: 'sasl.jaas.config' is a Java client property; librdkafka takes {_JAAS}"
    if "TrustStore" in message:
        return f"{where}: 'ssl.truststore.location' is a Java client property; use ssl.ca.location"
    if found := _FILE_FAILED.search(message):
        name = found.group(1)
        why = re.sub(r"^error:[0-9A-F]+:", "", found.group(2))
        return f"{where}: cannot use the {name} file {properties.get(name, '?')} ({why})"
    if found := _INVALID.search(message):
        return f"{where}: invalid value for client property '{found.group(1)}'"
    # Anything else quotes no value of ours: librdkafka names settings, not their values.
    return f"{where}: client configuration refused: {_quoteless(message)}"


def _quoteless(message: str) -> str:
    return re.sub(r'value "[^"]*"', "value", message)
