"""Validating the JSON Web Tokens clients send with SASL OAUTHBEARER (RFC 7519, RFC 7515).
Pure: a token and the configured keys in, the principal's name out.

Accepted signatures: HS256/384/512 against a shared key, RS256/384/512 against the RSA
keys of a JWKS document (RFC 7517; at least 2048 bits; a token naming a ``kid`` is
checked with that key only). RSA is verified the safe way: the signature raised to the
public exponent is compared, byte for byte and in constant time, with the PKCS#1 v1.5
encoding the signed text must have (nothing is parsed out of it). Unsecured tokens
(``alg: none``) are accepted only when explicitly allowed, as Kafka's default unsecured
validator is meant for tests. Claims: ``exp`` is required, ``nbf``, ``iss`` and ``aud``
are checked when present or configured, with 30 s of clock skew; the principal is a
string claim (``sub`` by default). Errors never quote the token.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

_HASH = {"256": "sha256", "384": "sha384", "512": "sha512"}
_DIGEST_INFO = {  # DER of DigestInfo's AlgorithmIdentifier, before the hash (RFC 8017 9.2)
    "sha256": bytes.fromhex("3031300d060960864801650304020105000420"),
    "sha384": bytes.fromhex("3041300d060960864801650304020205000430"),
    "sha512": bytes.fromhex("3051300d060960864801650304020305000440"),
}
MIN_RSA_BITS = 2048
SKEW_S = 30


class TokenError(Exception):
    """The token is refused; the message says why without quoting it."""


@dataclass(frozen=True)
class RsaKey:
    n: int = field(repr=False)
    e: int
    kid: str | None = None


def load_jwks(text: str) -> list[RsaKey]:
    """The RSA signing keys of a JWKS document (other key types are skipped)."""
    try:
        document = json.loads(text)
        keys = [
            RsaKey(_b64int(k["n"]), _b64int(k["e"]), k.get("kid"))
            for k in document["keys"]
            if k.get("kty") == "RSA" and k.get("use", "sig") == "sig"
        ]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise TokenError(f"not a JWKS document of RSA keys ({type(exc).__name__})") from None
    short = [k.kid or "?" for k in keys if k.n.bit_length() < MIN_RSA_BITS]
    if short:
        raise TokenError(f"RSA keys shorter than {MIN_RSA_BITS} bits: {', '.join(short)}")
    return keys


@dataclass(frozen=True)
class TokenValidator:
    """What a token must satisfy; ``principal`` returns the authenticated name."""

    hmac_key: bytes | None = field(default=None, repr=False)
    rsa_keys: tuple[RsaKey, ...] = ()
    allow_unsecured: bool = False
    issuer: str | None = None
    audience: str | None = None
    principal_claim: str = "sub"
    clock: Callable[[], float] = time.time

    def principal(self, token: str) -> str:
        parts = token.split(".")
        if len(parts) != 3:
            raise TokenError("not a JWT (three dot-separated parts)")
        header, claims = _json_part(parts[0], "header"), _json_part(parts[1], "payload")
        self._check_signature(header, f"{parts[0]}.{parts[1]}".encode(), parts[2])
        self._check_claims(claims)
        name = claims.get(self.principal_claim)
        if not isinstance(name, str) or not name:
            raise TokenError(f"no '{self.principal_claim}' claim naming the principal")
        return name

    def _check_signature(self, header: Mapping[str, Any], signed: bytes, signature: str) -> None:
        alg = str(header.get("alg", ""))
        if header.get("crit"):
            raise TokenError("critical header parameters are not understood")
        if alg == "none":
            if not self.allow_unsecured or signature:
                raise TokenError("unsecured tokens are not allowed")
            return
        raw = _b64(signature, "signature")
        hash_name = _HASH.get(alg[2:]) if alg[:2] in ("HS", "RS") else None
        if hash_name is None:
            raise TokenError(f"unsupported signature algorithm {alg or '(none given)'}")
        if alg.startswith("HS"):
            if self.hmac_key is None:
                raise TokenError(f"{alg} tokens are not accepted (no shared key configured)")
            good = hmac.compare_digest(hmac.new(self.hmac_key, signed, hash_name).digest(), raw)
        else:
            keys = [k for k in self.rsa_keys if header.get("kid") in (None, k.kid)]
            good = any(rsa_verifies(k, hash_name, signed, raw) for k in keys)
        if not good:
            raise TokenError("the signature does not verify")

    def _check_claims(self, claims: Mapping[str, Any]) -> None:
        now = self.clock()
        expires, not_before = claims.get("exp"), claims.get("nbf", now)
        if not isinstance(expires, int | float) or not isinstance(not_before, int | float):
            raise TokenError("no numeric 'exp' claim (or a 'nbf' that is not a number)")
        if now > expires + SKEW_S:
            raise TokenError("the token expired")
        if now < not_before - SKEW_S:
            raise TokenError("the token is not valid yet (nbf)")
        if self.issuer is not None and claims.get("iss") != self.issuer:
            raise TokenError("the token's issuer (iss) is not the configured one")
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.audience is not None and self.audience not in audiences:
            raise TokenError("the token is not meant for this audience (aud)")


def rsa_verifies(key: RsaKey, hash_name: str, signed: bytes, signature: bytes) -> bool:
    """RSASSA-PKCS1-v1_5 verification (RFC 8017 8.2.2), by re-encoding and comparing."""
    size = (key.n.bit_length() + 7) // 8
    if len(signature) != size:
        return False
    value = int.from_bytes(signature, "big")
    if value >= key.n:
        return False
    encoded = pow(value, key.e, key.n).to_bytes(size, "big")
    digest = _DIGEST_INFO[hash_name] + hashlib.new(hash_name, signed).digest()
    expected = b"\x00\x01" + b"\xff" * (size - len(digest) - 3) + b"\x00" + digest
    return hmac.compare_digest(encoded, expected)


def _json_part(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(_b64(text, what))
    except ValueError:
        raise TokenError(f"the token's {what} is not JSON") from None
    if not isinstance(value, dict):
        raise TokenError(f"the token's {what} is not a JSON object")
    return value


def _b64(text: str, what: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, binascii.Error):
        raise TokenError(f"the token's {what} is not base64url") from None


def _b64int(text: str) -> int:
    return int.from_bytes(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)), "big")
