"""Clients authenticate to the gateway: TLS on its listener and SASL (SCRAM-SHA-512 from
Kafka's Java console tools, PLAIN and OAUTHBEARER from confluent-kafka), in front of the
session's SASL/SCRAM clusters with an authorizer (`locked`, `vault`). Each client
principal reaches the backends with the credentials the principal map gives it, so the
backends' ACLs decide: `User:alice` acts as the backend user `client` (allowed on this
module's topics and groups), anyone else as `reader` (no ACLs). Wrong credentials and
unsecured tokens are refused, nothing is written, and no secret reaches the logs."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import ssl
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from harness.gateway import Gateway, running_gateway
from harness.helpers import java_on, run_cli, wait_for
from kmigrate.config import load_settings
from kmigrate.gateway.protocol import tls
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.protocol import wire
from kmigrate.model.cluster import AclEntry
from kmigrate.net import free_ports
from kmigrate.sandbox.clusters_yaml import load_passwords, password_variable
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars
from kmigrate.sandbox.state import CLIENT_USER, SandboxState
from tests.integration.gateway.test_gateway_clients import _route

PREFIX = f"gw-auth-{uuid.uuid4().hex[:8]}"  # this module's topics and groups
SECRETS = {  # the gateway's own users (and the backend user `reader`), from the environment
    "GW_AUTH_ALICE_PASSWORD": f"alice-{uuid.uuid4().hex}",
    "GW_AUTH_BOB_PASSWORD": f"bob-{uuid.uuid4().hex}",
    "GW_AUTH_READER_PASSWORD": f"reader-{uuid.uuid4().hex}",
}
BACKENDS = ("locked", "vault")


@dataclass(frozen=True)
class Certs:
    folder: Path

    def __getitem__(self, name: str) -> str:
        return str(self.folder / name)


def _openssl(folder: Path, *args: str, data: bytes | None = None) -> bytes:
    done = subprocess.run(["openssl", *args], cwd=folder, input=data, capture_output=True,
                          check=False, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-1500:]
    return done.stdout


def _make_certs(folder: Path) -> Certs:
    """A CA, the gateway's certificate (for 127.0.0.1), client certificates for alice and
    bob, and an RSA key whose public half is the JWKS the gateway checks tokens with."""
    _openssl(folder, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
             "-out", "ca.pem", "-days", "2", "-subj", "/CN=kmigrate test CA")  # fmt: skip
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, subject, ext in (("gateway", "/CN=127.0.0.1", ["-extfile", "san.ext"]),
                               ("alice", "/O=kmigrate test/CN=alice", []),
                               ("bob", "/O=kmigrate test/CN=bob", [])):  # fmt: skip
        _openssl(folder, "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
                 "-out", f"{name}.csr", "-subj", subject)  # fmt: skip
        _openssl(folder, "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem",
                 "-CAkey", "ca.key", "-CAcreateserial", "-out", f"{name}.pem", "-days", "2",
                 *ext)  # fmt: skip
    _openssl(folder, "genrsa", "-out", "jwt.key", "2048")
    modulus = _openssl(folder, "rsa", "-in", "jwt.key", "-noout", "-modulus").decode()
    n = bytes.fromhex(modulus.strip().removeprefix("Modulus="))
    jwks = {"keys": [{"kty": "RSA", "kid": "test", "n": _b64(n), "e": "AQAB"}]}
    (folder / "jwks.json").write_text(json.dumps(jwks))
    return Certs(folder)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _token(certs: Certs, subject: str, alg: str = "RS256") -> str:
    head = _b64(json.dumps({"alg": alg, "kid": "test", "typ": "JWT"}).encode())
    body = _b64(json.dumps({"sub": subject, "exp": int(time.time()) + 600}).encode())
    if alg == "none":
        return f"{head}.{body}."
    signature = _openssl(Path(certs.folder), "dgst", "-sha256", "-sign", "jwt.key",
                         data=f"{head}.{body}".encode())  # fmt: skip
    return f"{head}.{body}.{_b64(signature)}"


def _prepare_backends(secure: SandboxState) -> None:
    """`client` may do anything to this module's topics and groups; `reader` exists
    with no ACL at all."""
    settings = load_settings(secure.directory / "clusters.yaml")
    password = SECRETS["GW_AUTH_READER_PASSWORD"].encode()
    for name in BACKENDS:
        admin = AdminClient(settings.cluster(name).as_librdkafka())
        upsert = UserScramCredentialUpsertion(
            "reader", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), password
        )
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(30)
        with ClusterAdmin(settings.cluster(name)) as cluster:
            cluster.create_acls(
                AclEntry(kind, PREFIX, "PREFIXED", f"User:{CLIENT_USER}", "*", "ALL", "ALLOW")
                for kind in ("TOPIC", "GROUP")
            )
        reader = {**settings.cluster(name).as_librdkafka(), "sasl.username": "reader",
                  "sasl.password": password.decode()}  # fmt: skip
        wait_for(lambda reader=reader: _can_connect(reader), timeout=30,
                 message=f"the backend user reader authenticates on {name}")  # fmt: skip


def _can_connect(conf: dict[str, str]) -> bool:
    try:
        AdminClient(conf).list_topics(timeout=5)
        return True
    except Exception:
        return False


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return _make_certs(tmp_path_factory.mktemp("gw-auth-certs").resolve())


@pytest.fixture(scope="module")
def backends(secure: SandboxState) -> Iterator[None]:
    """The backend users and ACLs; the secrets in the environment while the module runs."""
    _prepare_backends(secure)
    with pytest.MonkeyPatch.context() as env:
        for name, value in SECRETS.items():
            env.setenv(name, value)
        yield


def _as(user: str) -> dict[str, dict[str, str]]:
    """Backend credentials of ``user`` on every backend (passwords as env references)."""
    password = {c: "${" + password_variable(c, CLIENT_USER) + "}" for c in BACKENDS}
    if user == "reader":
        password = dict.fromkeys(BACKENDS, "${GW_AUTH_READER_PASSWORD}")
    return {c: {"sasl.username": user, "sasl.password": password[c]} for c in BACKENDS}


@pytest.fixture(scope="module")
def auth_gateway(
    secure: SandboxState, backends: None, certs: Certs, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    settings = {
        "clients": {
            "tls": {"cert_file": certs["gateway.pem"], "key_file": certs["gateway.key"]},
            "sasl": {
                "mechanisms": ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"],
                "users": {"alice": "${GW_AUTH_ALICE_PASSWORD}", "bob": "${GW_AUTH_BOB_PASSWORD}"},
                "oauthbearer": {"jwks_file": certs["jwks.json"]},
            },
        },
        "principals": {"User:alice": _as(CLIENT_USER), "*": _as("reader")},
    }
    folder = tmp_path_factory.mktemp("gateway-auth").resolve()
    with running_gateway(secure.directory / "clusters.yaml", folder, group_home="vault",
                         settings=settings) as gw:  # fmt: skip
        yield gw


def _topic(secure: SandboxState, gw: Gateway, name: str) -> str:
    topic = f"{PREFIX}-{name}"
    with ClusterAdmin(load_settings(gw.config).cluster("locked")) as admin:
        admin.create_topic(topic, 2)
    _route(gw, topic, "locked")
    return topic


def _stored(gw: Gateway, topic: str) -> int:
    with ClusterAdmin(load_settings(gw.config).cluster("locked")) as admin:
        return sum(w.high for w in admin.watermarks(topic))


def _logs(gw: Gateway) -> str:
    return "".join((gw.logs / f"gateway-{i}.log").read_text() for i in gw.ports)


def _sasl(gw: Gateway, certs: Certs, mechanism: str, **more: Any) -> dict[str, Any]:
    return {"bootstrap.servers": gw.bootstrap, "security.protocol": "SASL_SSL",
            "sasl.mechanisms": mechanism, "ssl.ca.location": certs["ca.pem"], **more}  # fmt: skip


def _plain(user: str, password: str) -> dict[str, str]:
    return {"sasl.username": user, "sasl.password": password}


def _alice(gw: Gateway, certs: Certs, mechanism: str = "PLAIN") -> dict[str, Any]:
    return _sasl(gw, certs, mechanism, **_plain("alice", SECRETS["GW_AUTH_ALICE_PASSWORD"]))


def _oauth(gw: Gateway, certs: Certs, token: str) -> dict[str, Any]:
    return _sasl(gw, certs, "OAUTHBEARER", oauth_cb=lambda _c: (token, time.time() + 600))


def _produce(
    conf: dict[str, Any], topic: str, values: list[bytes], timeout_ms: int = 30000
) -> tuple[set[bytes], set[str]]:
    """(acknowledged values, error names of the failed sends and of the client)."""
    acked: set[bytes] = set()
    errors: set[str] = set()

    def report(error: KafkaError | None, message: Any) -> None:
        (errors.add(error.name()) if error else acked.add(message.value()))

    producer = Producer({**conf, "enable.idempotence": True, "message.timeout.ms": timeout_ms,
                         "error_cb": lambda e: errors.add(e.name())})  # fmt: skip
    producer.poll(0)  # serves oauth_cb before the first connection
    for value in values:
        producer.produce(topic, value, on_delivery=report)
    assert producer.flush(60) == 0
    return acked, errors


def test_java_console_tools_over_sasl_ssl_with_scram_sha_512(
    secure: SandboxState, auth_gateway: Gateway, certs: Certs, tmp_path: Path
) -> None:
    topic = _topic(secure, auth_gateway, "java")
    command_config = tmp_path / "client.properties"
    command_config.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="alice" password="{SECRETS["GW_AUTH_ALICE_PASSWORD"]}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={certs['ca.pem']}\n"
    )
    jars = ensure_jars(DEFAULT_KAFKA_VERSION)
    values = [f"java-{n}" for n in range(50)]
    sent = subprocess.run(
        [*java_on(jars), "org.apache.kafka.tools.ConsoleProducer",
         "--bootstrap-server", auth_gateway.bootstrap, "--topic", topic,
         "--command-config", str(command_config), "--command-property", "acks=all"],
        input="\n".join(values) + "\n", capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr[-2000:]
    read = subprocess.run(
        [*java_on(jars), "org.apache.kafka.tools.consumer.ConsoleConsumer",
         "--bootstrap-server", auth_gateway.bootstrap, "--topic", topic,
         "--group", f"{PREFIX}-java", "--from-beginning", "--max-messages", "50",
         "--timeout-ms", "60000", "--command-config", str(command_config)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr[-2000:]
    assert sorted(read.stdout.split()) == sorted(values), "each record read once"
    assert _stored(auth_gateway, topic) == 50


def test_confluent_kafka_over_sasl_ssl_with_plain_and_oauthbearer(
    secure: SandboxState, auth_gateway: Gateway, certs: Certs
) -> None:
    topic = _topic(secure, auth_gateway, "librdkafka")
    plain = _alice(auth_gateway, certs)
    values = [f"plain-{n}".encode() for n in range(50)]
    assert _produce(plain, topic, values) == (set(values), set())

    token = _token(certs, "alice")
    oauth = _oauth(auth_gateway, certs, token)
    more = [f"oauth-{n}".encode() for n in range(50)]
    assert _produce(oauth, topic, more) == (set(more), set())

    consumer = Consumer({**oauth, "group.id": f"{PREFIX}-py", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen: list[bytes] = []

    def read_all() -> bool:
        seen.extend(m.value() for m in consumer.consume(200, 0.5) if m.error() is None)
        return len(seen) >= 100

    try:
        wait_for(read_all, timeout=60, message="100 records through OAUTHBEARER")
    finally:
        consumer.close()
    assert sorted(seen) == sorted(values + more)


def test_a_wrong_password_or_an_unsecured_token_is_refused_and_writes_nothing(
    secure: SandboxState, auth_gateway: Gateway, certs: Certs
) -> None:
    topic = _topic(secure, auth_gateway, "refused")
    wrong = _sasl(auth_gateway, certs, "SCRAM-SHA-512", **_plain("alice", "not-alices-pw"))
    acked, errors = _produce(wrong, topic, [b"never"], timeout_ms=5000)
    assert not acked and "_AUTHENTICATION" in errors, errors
    unsecured = _token(certs, "alice", alg="none")
    acked, errors = _produce(_oauth(auth_gateway, certs, unsecured), topic, [b"never"], 5000)
    assert not acked and "_AUTHENTICATION" in errors, errors
    assert _stored(auth_gateway, topic) == 0
    logs = _logs(auth_gateway)
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in logs
    assert "unsecured tokens are not allowed" in logs


def test_backends_see_the_mapped_principal_and_their_acls_decide(
    secure: SandboxState, auth_gateway: Gateway, certs: Certs
) -> None:
    """alice acts as `client` (allowed by the ACLs); bob, unmapped, as `reader` (no
    ACLs): the backend refuses him, which it would not if the gateway acted as itself."""
    topic = _topic(secure, auth_gateway, "acl")
    alice = _alice(auth_gateway, certs, "SCRAM-SHA-256")
    assert _produce(alice, topic, [b"by-alice"]) == ({b"by-alice"}, set())
    bob = _sasl(auth_gateway, certs, "PLAIN", **_plain("bob", SECRETS["GW_AUTH_BOB_PASSWORD"]))
    acked, errors = _produce(bob, topic, [b"by-bob"])
    assert not acked and errors == {"TOPIC_AUTHORIZATION_FAILED"}, errors
    assert _stored(auth_gateway, topic) == 1
    logs = _logs(auth_gateway)
    assert "refused a principal's mapped credentials" not in logs, "reader authenticated"


def test_requests_before_authentication_close_the_connection(
    auth_gateway: Gateway, certs: Certs
) -> None:
    context = ssl.create_default_context(cafile=certs["ca.pem"])
    host, port = auth_gateway.instance(1).split(":")
    metadata = wire.request_type(3, 12)(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=host) as conn,
    ):
        conn.sendall(wire.encode_request(metadata, 1, "sneaky"))
        assert conn.recv(100) == b"", "the gateway closed the connection"
    wait_for(lambda: "metadata before authenticating" in _logs(auth_gateway), timeout=10,
             message="one log line saying why")  # fmt: skip
    with socket.create_connection((host, int(port)), timeout=10) as plain:
        plain.sendall(wire.encode_request(metadata, 1, "plaintext"))
        try:
            answer = plain.recv(100)
        except ConnectionResetError:
            answer = b""
        assert answer == b"" or answer[0] == 0x15, "a TLS alert or nothing, no Kafka answer"


def test_no_secret_reaches_the_gateways_logs(
    secure: SandboxState, auth_gateway: Gateway, certs: Certs
) -> None:
    topic = _topic(secure, auth_gateway, "logs")
    _produce(_alice(auth_gateway, certs), topic, [b"x"])
    guess = _sasl(auth_gateway, certs, "PLAIN", **_plain("alice", "guessed-password-1"))
    _produce(guess, topic, [b"y"], timeout_ms=3000)
    logs = _logs(auth_gateway)
    secrets = [*SECRETS.values(), "guessed-password-1", _token(certs, "alice").split(".")[2]]
    for cluster in BACKENDS:
        secrets += load_passwords(secure.directory, cluster).values()
    assert not [s for s in secrets if s in logs]


def test_a_client_certificate_names_the_principal(certs: Certs) -> None:
    """mTLS on the listener's TLS context: a client certificate signed by the CA is
    required and its subject is the principal; a client without one is refused."""
    context = tls.server_context(certs["gateway.pem"], certs["gateway.key"],
                                 ca_file=certs["ca.pem"], client_auth="required")  # fmt: skip
    seen: list[str | None] = []

    async def main() -> None:
        async def handle(_r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            seen.append(tls.principal_of(w.get_extra_info("peercert")))
            w.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context)
        port = server.sockets[0].getsockname()[1]
        client = ssl.create_default_context(cafile=certs["ca.pem"])
        client.load_cert_chain(certs["alice.pem"], certs["alice.key"])
        _r, w = await asyncio.open_connection("127.0.0.1", port, ssl=client)
        await _r.read()
        w.close()
        anonymous = ssl.create_default_context(cafile=certs["ca.pem"])
        try:  # TLS 1.3: the refusal arrives after the client's side of the handshake
            r2, _w2 = await asyncio.open_connection("127.0.0.1", port, ssl=anonymous)
            assert await r2.read() == b""
        except (ssl.SSLError, ConnectionError):
            pass
        server.close()

    asyncio.run(main())
    assert seen == ["User:CN=alice,O=kmigrate test"], "the client without one never got in"


def test_without_client_authentication_only_loopback_is_served(
    auth_gateway: Gateway, tmp_path: Path
) -> None:
    body = yaml.safe_load(auth_gateway.config.read_text())
    del body["gateway"]["clients"], body["gateway"]["principals"]
    (tmp_path / "open.yaml").write_text(yaml.safe_dump(body))
    port = free_ports(1)[0]
    refused = run_cli("gateway", "start", "--listen", f"0.0.0.0:{port}", "--id", "9",
                      config=str(tmp_path / "open.yaml"))  # fmt: skip
    lines = [line for line in refused.stderr.splitlines() if line.startswith("error: ")]
    assert refused.code == 2 and len(lines) == 1, refused.stderr[-1500:]
    assert "listening on 0.0.0.0 (not loopback) needs client authentication" in lines[0]
    assert auth_gateway.registered() == {1, 2}, "nothing registered"


def test_mtls_clients_act_as_their_certificates_principal(
    secure: SandboxState, backends: None, certs: Certs, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A listener with TLS only and required client certificates: alice's certificate
    subject is mapped to the backend user `client` (allowed), bob's falls to `*`, the
    user `reader` (refused by the backend's ACLs); without a certificate, no way in."""
    settings = {
        "clients": {"tls": {"cert_file": certs["gateway.pem"], "key_file": certs["gateway.key"],
                            "ca_file": certs["ca.pem"]}},
        "principals": {"User:CN=alice,O=kmigrate test": _as(CLIENT_USER), "*": _as("reader")},
    }  # fmt: skip
    folder = tmp_path_factory.mktemp("gateway-mtls").resolve()
    with running_gateway(secure.directory / "clusters.yaml", folder, group_home="vault",
                         settings=settings) as gw:  # fmt: skip
        topic = _topic(secure, gw, "mtls")
        tls_only = {"bootstrap.servers": gw.bootstrap, "security.protocol": "SSL",
                    "ssl.ca.location": certs["ca.pem"]}  # fmt: skip
        alice, bob = (
            {**tls_only, "ssl.certificate.location": certs[f"{who}.pem"],
             "ssl.key.location": certs[f"{who}.key"]}
            for who in ("alice", "bob")
        )  # fmt: skip
        assert _produce(alice, topic, [b"by-alice"]) == ({b"by-alice"}, set())
        assert _produce(bob, topic, [b"by-bob"]) == (set(), {"TOPIC_AUTHORIZATION_FAILED"})
        acked, errors = _produce(tls_only, topic, [b"no-cert"], timeout_ms=3000)
        assert not acked and "TOPIC_AUTHORIZATION_FAILED" not in errors, errors
        assert _stored(gw, topic) == 1
