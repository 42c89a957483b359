"""The gateway's SASL server (PLAIN, SCRAM, OAUTHBEARER), its JWT validation, the
per-connection state machine and the TLS principal: pure, no sockets."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kmigrate.codec.sasl import SaslClient
from kmigrate.config import parse_settings
from kmigrate.errors import ConfigError
from kmigrate.gateway.control.principals import principal_map
from kmigrate.gateway.protocol import jwt
from kmigrate.gateway.protocol.sasl_server import (
    MIN_ITERATIONS,
    OAuthBearerExchange,
    PlainExchange,
    SaslFailure,
    ScramExchange,
    Users,
)
from kmigrate.gateway.protocol.tls import distinguished_name, principal_of
from kmigrate.gateway.serving.authentication import Access, Authenticator, Sasl
from kmigrate.kafka.protocol import wire

# RFC 7677 section 3: SCRAM-SHA-256, user "user", password "pencil".
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_CLIENT_FINAL = (
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _rfc_users() -> Users:
    return Users({"user": "pencil"}, 4096, salt=lambda: RFC_SALT)


def test_scram_sha_256_matches_rfc_7677s_exchange() -> None:
    server = ScramExchange("SCRAM-SHA-256", _rfc_users(), nonce=lambda: RFC_SERVER_NONCE)
    first = server.step(f"n,,n=user,r={RFC_CLIENT_NONCE}".encode())
    assert first.decode() == (
        f"r={RFC_CLIENT_NONCE}{RFC_SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert server.principal is None
    assert server.step(RFC_CLIENT_FINAL.encode()).decode() == RFC_SERVER_FINAL
    assert server.principal == "User:user"


def test_the_gateways_scram_client_computes_rfc_7677s_proof() -> None:
    client = SaslClient("SCRAM-SHA-256", "user", "pencil", _nonce=RFC_CLIENT_NONCE)
    assert client.first() == f"n,,n=user,r={RFC_CLIENT_NONCE}".encode()
    server_first = f"r={RFC_CLIENT_NONCE}{RFC_SERVER_NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    assert client.answer(server_first.encode()).decode() == RFC_CLIENT_FINAL
    client.check_final(RFC_SERVER_FINAL.encode())


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_round_trip_with_the_gateways_own_client(mechanism: str) -> None:
    users = Users({"alice": "s3cret=,x"})
    for password, accepted in (("s3cret=,x", True), ("wrong", False)):
        client, server = SaslClient(mechanism, "alice", password), ScramExchange(mechanism, users)
        final = client.answer(server.step(client.first()))
        if accepted:
            client.check_final(server.step(final))
            assert server.principal == "User:alice"
        else:
            with pytest.raises(SaslFailure, match="invalid credentials"):
                server.step(final)
            assert server.principal is None


def test_an_unknown_scram_user_fails_like_a_wrong_password() -> None:
    users = Users({"alice": "pw"})
    answers = []
    for _ in range(2):
        client, server = (
            SaslClient("SCRAM-SHA-512", "mallory", "pw"),
            ScramExchange("SCRAM-SHA-512", users),
        )
        server_first = server.step(client.first())
        answers.append(server_first.decode().split(",", 1)[1])  # salt and iterations
        with pytest.raises(SaslFailure, match="invalid credentials"):
            server.step(client.answer(server_first))
    assert answers[0] == answers[1], "the same decoy salt each time: no user enumeration"


def test_scram_refuses_a_changed_nonce_or_binding_and_few_iterations() -> None:
    users = Users({"alice": "pw"})
    server = ScramExchange("SCRAM-SHA-256", users)
    client = SaslClient("SCRAM-SHA-256", "alice", "pw")
    final = client.answer(server.step(client.first())).decode()
    with pytest.raises(SaslFailure, match="client-final"):
        server.step(final.replace("c=biws", "c=eSws").encode())
    with pytest.raises(SaslFailure, match="client-first"):
        ScramExchange("SCRAM-SHA-256", users).step(b"p=tls-unique,,n=alice,r=x")
    with pytest.raises(ValueError, match="4096"):
        Users({"a": "b"}, MIN_ITERATIONS - 1)


def test_plain_checks_the_salted_credential_and_the_authorization_id() -> None:
    users = Users({"alice": "pw"})
    exchange = PlainExchange(users)
    assert exchange.step(b"\0alice\0pw") == b"" and exchange.principal == "User:alice"
    assert PlainExchange(users).step(b"alice\0alice\0pw") == b""
    for bad, says in (
        (b"\0alice\0nope", "invalid credentials"),
        (b"\0bob\0pw", "invalid credentials"),
        (b"bob\0alice\0pw", "authorization id"),
        (b"alice-pw", "Invalid SASL/PLAIN"),
    ):
        with pytest.raises(SaslFailure, match=says) as failure:
            PlainExchange(users).step(bad)
        assert "pw" not in str(failure.value).replace("password", "")


# ---------------------------------------------------------------- JWT

NOW = 1_900_000_000.0
KEY = b"k" * 32


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(claims: dict[str, Any], alg: str = "HS256", key: bytes = KEY) -> str:
    head = _b64(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    body = _b64(json.dumps(claims).encode())
    if alg == "none":
        return f"{head}.{body}."
    digest = {"HS256": "sha256", "HS512": "sha512"}[alg]
    return f"{head}.{body}.{_b64(hmac.new(key, f'{head}.{body}'.encode(), digest).digest())}"


def validator(**kwargs: Any) -> jwt.TokenValidator:
    return jwt.TokenValidator(**{"hmac_key": KEY, "clock": lambda: NOW, **kwargs})


def test_a_signed_token_names_its_principal() -> None:
    claims = {"sub": "alice", "exp": NOW + 60, "iss": "idp", "aud": ["kafka", "x"]}
    assert validator().principal(token(claims)) == "alice"
    assert validator().principal(token(claims, "HS512")) == "alice"
    assert validator(issuer="idp", audience="kafka").principal(token(claims)) == "alice"
    assert validator(principal_claim="iss").principal(token(claims)) == "idp"


@pytest.mark.parametrize(
    ("claims", "alg", "key", "settings", "says"),
    [
        ({"sub": "a", "exp": NOW - 31}, "HS256", KEY, {}, "expired"),
        ({"sub": "a"}, "HS256", KEY, {}, "exp"),
        ({"sub": "a", "exp": NOW + 60, "nbf": NOW + 100}, "HS256", KEY, {}, "not valid yet"),
        ({"sub": "a", "exp": NOW + 60}, "HS256", b"x" * 32, {}, "signature does not verify"),
        ({"sub": "a", "exp": NOW + 60}, "none", KEY, {}, "unsecured tokens are not allowed"),
        ({"sub": "a", "exp": NOW + 60}, "HS256", KEY, {"issuer": "idp"}, "issuer"),
        ({"sub": "a", "exp": NOW + 60, "aud": "y"}, "HS256", KEY, {"audience": "kafka"}, "aud"),
        ({"exp": NOW + 60}, "HS256", KEY, {}, "'sub' claim"),
        ({"sub": "a", "exp": NOW + 60}, "HS256", KEY, {"hmac_key": None}, "no shared key"),
    ],
)
def test_a_bad_token_is_refused_with_a_reason_that_never_quotes_it(
    claims: dict[str, Any], alg: str, key: bytes, settings: dict[str, Any], says: str
) -> None:
    bad = token(claims, alg, key)
    with pytest.raises(jwt.TokenError, match=says) as refused:
        validator(**settings).principal(bad)
    assert bad.split(".")[1] not in str(refused.value)


def test_unsecured_tokens_only_when_allowed() -> None:
    unsecured = token({"sub": "tester", "exp": NOW + 60}, "none")
    assert validator(allow_unsecured=True).principal(unsecured) == "tester"
    forged = token({"sub": "root", "exp": NOW + 60}).rsplit(".", 1)[0]
    forged = forged.replace(forged.split(".")[0], _b64(b'{"alg":"none"}')) + ".c2ln"
    with pytest.raises(jwt.TokenError):
        validator(allow_unsecured=True).principal(forged)


# RFC 7515 appendix A.2: an RS256 JWS and its key.
RFC_RSA_N = (
    "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4Q"
    "lL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBY"
    "UsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNm"
    "oudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ"
)
RFC_JWS = (
    "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS"
    "9pc19yb290Ijp0cnVlfQ.cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0"
    "Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIA"
    "RNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvW"
    "h6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw"
)


def test_rs256_verifies_rfc_7515s_example_against_a_jwks_key() -> None:
    keys = jwt.load_jwks(json.dumps({"keys": [{"kty": "RSA", "n": RFC_RSA_N, "e": "AQAB"}]}))
    check = jwt.TokenValidator(rsa_keys=tuple(keys), principal_claim="iss", clock=lambda: 1.3e9)
    assert check.principal(RFC_JWS) == "joe"
    head, body, signature = RFC_JWS.split(".")
    tampered = f"{head}.{body[:-2]}fX.{signature}"
    with pytest.raises(jwt.TokenError, match="signature"):
        check.principal(tampered)
    with pytest.raises(jwt.TokenError, match="2048"):
        jwt.load_jwks(json.dumps({"keys": [{"kty": "RSA", "n": _b64(b"\x7f" * 64), "e": "AQAB"}]}))


def test_oauthbearer_reads_the_bearer_token_from_the_client_message() -> None:
    seen = []
    exchange = OAuthBearerExchange(lambda t: seen.append(t) or "alice")
    assert exchange.step(b"n,,\x01auth=Bearer abc.def.ghi\x01\x01") == b""
    assert seen == ["abc.def.ghi"] and exchange.principal == "User:alice"
    with pytest.raises(SaslFailure, match="no bearer token"):
        OAuthBearerExchange(lambda t: t).step(b"n,,\x01host=x\x01\x01")


# ---------------------------------------------------------------- per connection


def _request(api_key: int, version: int, **fields: Any) -> wire.Request:
    return wire.Request(api_key, version, 1, "c", wire.request_type(api_key, version)(**fields))


def test_a_connection_authenticates_once_and_only_then_may_send_other_requests() -> None:
    access = Access(sasl=Sasl(("PLAIN", "SCRAM-SHA-512"), Users({"alice": "pw"}), None))
    auth = Authenticator(access, "127.0.0.1:1", None)
    assert auth.allows(18) and auth.allows(17) and not auth.allows(0)
    shake = asyncio.run(auth.answer(_request(17, 1, mechanism="GSSAPI")))
    assert shake.error_code == ErrorCode.unsupported_sasl_mechanism and auth.failed
    assert shake.mechanisms == ("PLAIN", "SCRAM-SHA-512")

    auth = Authenticator(access, "127.0.0.1:2", None)
    assert asyncio.run(auth.answer(_request(17, 1, mechanism="PLAIN"))).error_code == 0
    done = asyncio.run(auth.answer(_request(36, 2, auth_bytes=b"\0alice\0pw")))
    assert done.error_code == ErrorCode.none and auth.authenticated and auth.allows(0)
    assert auth.principal == "User:alice"
    again = asyncio.run(auth.answer(_request(17, 1, mechanism="PLAIN")))
    assert again.error_code == ErrorCode.illegal_sasl_state

    auth = Authenticator(access, "127.0.0.1:3", None)
    asyncio.run(auth.answer(_request(17, 1, mechanism="PLAIN")))
    wrong = asyncio.run(auth.answer(_request(36, 2, auth_bytes=b"\0alice\0guess")))
    assert wrong.error_code == ErrorCode.sasl_authentication_failed and auth.failed
    assert "guess" not in (wrong.error_message or "") and not auth.allows(0)


def test_an_unmapped_principal_is_refused_at_authentication(tmp_path: Path) -> None:
    settings = parse_settings(
        """
clusters:
  a: {bootstrap_servers: "h:1", properties: {security.protocol: SASL_PLAINTEXT,
      sasl.mechanism: SCRAM-SHA-512, sasl.username: gw, sasl.password: gwpw}}
gateway:
  group_home: a
  zookeeper: "z:2181"
  principals:
    "User:alice": {a: {sasl.username: alice-a, sasl.password: s3cret}}
""",
        tmp_path / "clusters.yaml",
    )
    principals = principal_map(settings.gateway, settings.clusters)
    identity = principals.identity("a", "User:alice")
    assert identity is not None and "s3cret" not in repr(identity)
    assert "s3cret" not in repr(settings)
    assert principals.identity("a", "User:bob") is None and not principals.admits("User:bob")
    access = Access(sasl=Sasl(("PLAIN",), Users({"bob": "pw"}), None), principals=principals)
    auth = Authenticator(access, "127.0.0.1:4", None)
    asyncio.run(auth.answer(_request(17, 1, mechanism="PLAIN")))
    refused = asyncio.run(auth.answer(_request(36, 2, auth_bytes=b"\0bob\0pw")))
    assert refused.error_code == ErrorCode.sasl_authentication_failed
    assert "User:bob is not mapped" in (refused.error_message or "")
    with pytest.raises(ConfigError, match="no such cluster"):
        bad = settings.gateway.model_copy(update={"principals": {"User:x": {"nope": {}}}})
        principal_map(bad, settings.clusters)


def test_a_client_certificates_subject_is_its_principal() -> None:
    subject = ((("countryName", "DE"),), (("organizationName", "Acme, Inc"),),
               (("commonName", "alice"),))  # fmt: skip
    assert distinguished_name(subject) == "CN=alice,O=Acme\\, Inc,C=DE"
    assert principal_of({"subject": subject}) == "User:CN=alice,O=Acme\\, Inc,C=DE"
    assert principal_of(None) is None and principal_of({}) is None


def test_pbkdf2_is_what_the_stored_key_is_made_of() -> None:
    """The stored credential is RFC 5802's StoredKey, not the password."""
    users = Users({"u": "pencil"}, 4096, salt=lambda: RFC_SALT)
    credential = users.scram("SCRAM-SHA-256", "u")
    assert credential is not None
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", RFC_SALT, 4096)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    assert credential.stored_key == hashlib.sha256(client_key).digest()
    assert b"pencil" not in repr(credential).encode()


def test_a_listener_off_loopback_needs_client_authentication() -> None:
    from kmigrate.cli.gateway import _check_listen
    from kmigrate.config import ClientSaslConfig, ClientsConfig, ClientTlsConfig

    for host in ("127.0.0.1", "::1", "localhost"):
        _check_listen(host, None)
    tls_only = ClientsConfig(tls=ClientTlsConfig(cert_file="c", key_file="k"))
    for clients in (None, ClientsConfig(), tls_only):
        with pytest.raises(ConfigError, match="not loopback"):
            _check_listen("10.0.0.5", clients)
    mtls = ClientsConfig(tls=ClientTlsConfig(cert_file="c", key_file="k", ca_file="ca"))
    _check_listen("0.0.0.0", mtls)
    _check_listen("0.0.0.0", ClientsConfig(sasl=ClientSaslConfig(mechanisms=["PLAIN"])))
    assert mtls.security_protocol == "SSL" and ClientsConfig().security_protocol == "PLAINTEXT"
