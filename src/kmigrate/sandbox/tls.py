"""TLS for a sandbox cluster (`sandbox up --tls`): a certificate authority of its own,
one broker certificate for 127.0.0.1 and localhost, as PEM files the brokers read
(Kafka's PEM key store and trust store, KIP-651) and clients trust (the CA), and a
client certificate for each sandbox user, which clients present where the brokers ask
for one (`sandbox up --mtls`).

    CLUSTER/tls/ca.pem      the CA certificate (clusters.yaml: ssl.ca.location)
    CLUSTER/tls/broker.pem  the brokers' private key (PKCS#8) and certificate chain
    CLUSTER/tls/USER.crt    USER's certificate (CN=CLUSTER USER; clusters.yaml:
    CLUSTER/tls/USER.key    ssl.certificate.location) and private key (ssl.key.location)

Made once per cluster; the files are complete or absent (written aside, then renamed).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

FOLDER = "tls"
_VALID = dt.timedelta(days=3650)


# Where the brokers ask for client certificates: principals are the certificates' common
# names, lower-cased (Kafka's ssl.principal.mapping.rules), as on-premises clusters name them.
MAPPING_RULES = "RULE:^CN=([^,]+)$/$1/L,DEFAULT"


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    broker: Path

    def client(self, user: str) -> tuple[Path, Path]:
        """``user``'s certificate and private key."""
        return self.ca.with_name(f"{user}.crt"), self.ca.with_name(f"{user}.key")


def tls_files(cluster_folder: Path) -> TlsFiles:
    folder = cluster_folder / FOLDER
    return TlsFiles(folder / "ca.pem", folder / "broker.pem")


def principal(cluster: str, who: str) -> str:
    """The principal of the cluster's certificate for ``who`` (``broker`` or a user)
    where the brokers ask for client certificates (MAPPING_RULES)."""
    return "User:" + f"{cluster} {who}".lower()


def ensure_certificates(cluster_folder: Path, cluster: str, users: tuple[str, ...]) -> TlsFiles:
    """The cluster's CA, broker certificate and ``users``' client certificates, made if
    missing."""
    files = tls_files(cluster_folder)
    made = [files.ca, files.broker, *(p for u in users for p in files.client(u))]
    if all(p.is_file() for p in made):
        return files
    files.ca.parent.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"kmigrate sandbox CA {cluster}")])
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{cluster} broker")])
    alternative = x509.SubjectAlternativeName(
        [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    )
    cert = (
        _builder(name, ca_name, key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(alternative, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    private = key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _write(files.broker, private + cert.public_bytes(pem) + ca.public_bytes(pem), 0o600)
    for user in users:
        _client_certificate(files, user, f"{cluster} {user}", ca_name, ca_key, now)
    _write(files.ca, ca.public_bytes(pem), 0o644)
    return files


def _client_certificate(
    files: TlsFiles,
    user: str,
    common_name: str,
    ca_name: x509.Name,
    ca_key: ec.EllipticCurvePrivateKey,
    now: dt.datetime,
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    cert = (
        _builder(name, ca_name, key.public_key(), now)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    crt, private = files.client(user)
    _write(crt, cert.public_bytes(pem), 0o644)
    _write(private, key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ), 0o600)  # fmt: skip


def broker_properties(files: TlsFiles, *, client_certificates: bool) -> dict[str, str]:
    """What a broker with an SSL or SASL_SSL listener adds to server.properties;
    ``client_certificates``: it asks every client for one, and names principals by
    MAPPING_RULES."""
    found = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(files.broker),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(files.ca),
        "ssl.client.auth": "required" if client_certificates else "none",
    }
    if client_certificates:
        found["ssl.principal.mapping.rules"] = MAPPING_RULES
    return found


def _builder(
    subject: x509.Name, issuer: x509.Name, public: ec.EllipticCurvePublicKey, now: dt.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + _VALID)
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not ca,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=not ca,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _write(path: Path, content: bytes, mode: int) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(content)
    os.replace(tmp, path)
