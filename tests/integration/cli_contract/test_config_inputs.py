"""Bad configuration (clusters.yaml, client properties, files they name, unreadable
documents) and bad `clusters check` input: exit 2, one line naming the cluster and the
property or file, before any cluster is contacted. See harness.py."""

from __future__ import annotations

from tests.integration.cli_contract.harness import CONFIG, case, run_cases

TOPICS = ("topics", "list", "--cluster", "source")
CHECK = ("clusters", "check")


def _props(*lines: str, protocol: str = "SASL_PLAINTEXT") -> str:
    """A config whose cluster `source` has these extra client properties."""
    extra = "".join(f"      {line}\n" for line in lines)
    return (
        "clusters:\n  source:\n    bootstrap_servers: 127.0.0.1:1\n    timeout_s: 2\n"
        f"    properties:\n      security.protocol: {protocol}\n"
        "      sasl.mechanism: PLAIN\n      sasl.username: kmigrate\n"
        f"      sasl.password: contract-literal-secret\n{extra}"
    )


def _tls(*lines: str) -> str:
    extra = "".join(f"      {line}\n" for line in lines)
    return (
        "clusters:\n  source:\n    bootstrap_servers: 127.0.0.1:1\n    timeout_s: 2\n"
        f"    properties:\n      security.protocol: SSL\n{extra}"
    )


JAAS = (
    "sasl.jaas.config: 'org.apache.kafka.common.security.plain.PlainLoginModule required"
    ' username="u" password="contract-literal-secret";\''
)
NOT_UTF8 = CONFIG.encode().replace(b"kmigrate", b"km\xe9grate", 1)

CASES = [
    # client properties librdkafka does not know
    case(*TOPICS, exit=2, says="unknown client property 'foo.bar'", config=_props("foo.bar: 1")),
    case(
        *CHECK,
        exit=2,
        says="cluster 'source': unknown client property 'fetch.max.wait'",
        config=_props("fetch.max.wait: 5"),
    ),
    # Java client names, with the librdkafka equivalent
    case(
        *TOPICS,
        exit=2,
        says="'sasl.jaas.config' is a Java client property; librdkafka "
        "(kmigrate's client) takes sasl.mechanism",
        config=_props(JAAS),
    ),
    case(
        *TOPICS,
        exit=2,
        says="takes ssl.ca.location",
        config=_tls("ssl.truststore.location: /etc/kafka/truststore.jks"),
    ),
    case(
        *TOPICS,
        exit=2,
        says="'ssl.truststore.password' is a Java client property",
        config=_tls("ssl.truststore.password: contract-literal-secret"),
    ),
    case(
        *TOPICS,
        exit=2,
        says="ssl.certificate.location + ssl.key.location",
        config=_tls("ssl.keystore.type: JKS"),
    ),
    case(*TOPICS, exit=2, says="takes ssl.key.pem", config=_tls("ssl.keystore.key: x")),
    case(
        *TOPICS,
        exit=2,
        says="takes ssl.certificate.pem",
        config=_tls("ssl.keystore.certificate.chain: x"),
    ),
    case(
        *TOPICS,
        exit=2,
        says="sasl.oauthbearer.method: oidc",
        config=_props("sasl.login.callback.handler.class: com.example.Handler"),
    ),
    case(
        *TOPICS,
        exit=2,
        says="'value.deserializer' is a Java client property",
        config=_props("value.deserializer: org.example.Bytes"),
    ),
    case(
        *TOPICS,
        exit=2,
        says="librdkafka negotiates the TLS version",
        config=_tls("ssl.enabled.protocols: TLSv1.2"),
    ),
    case(
        *TOPICS,
        exit=2,
        says="librdkafka takes 'none'",
        config=_tls("ssl.endpoint.identification.algorithm: ''"),
    ),
    # files the client properties name
    case(
        *TOPICS,
        exit=2,
        says="cluster 'source': ssl.ca.location file ca.pem does not exist",
        config=_tls("ssl.ca.location: ca.pem"),
    ),
    case(
        *CHECK,
        exit=2,
        says="ssl.ca.location file /nonexistent/ca.pem does not exist",
        config=_tls("ssl.ca.location: /nonexistent/ca.pem"),
    ),
    case(
        *TOPICS,
        exit=2,
        says="cannot use the ssl.ca.location file ca.pem",
        config=_tls("ssl.ca.location: ca.pem"),
        files={"ca.pem": "not a certificate\n"},
    ),
    case(
        *TOPICS,
        exit=2,
        says="ssl.certificate.location file client.pem does not exist",
        config=_tls("ssl.certificate.location: client.pem", "ssl.key.location: client.key"),
    ),
    case(
        *TOPICS,
        exit=2,
        says="ssl.key.location file client.key does not exist",
        config=_tls("ssl.key.location: client.key"),
    ),
    case(
        *TOPICS,
        exit=2,
        says="looks like a Java keystore (JKS)",
        config=_tls("ssl.keystore.location: client.jks", "ssl.keystore.password: x"),
        files={"client.jks": b"\xfe\xed\xfe\xed\x00\x00\x00\x02"},
    ),
    # values librdkafka refuses
    case(
        *TOPICS,
        exit=2,
        says="invalid value for client property 'security.protocol'",
        config=_props(protocol="SASL_PLAINTEXTT"),
    ),
    case(
        *TOPICS,
        exit=2,
        says="invalid value for client property 'socket.timeout.ms'",
        config=_props("socket.timeout.ms: soon"),
    ),
    case(
        *TOPICS,
        exit=2,
        says="sasl.username and sasl.password must be set",
        config=_tls("sasl.mechanism: PLAIN").replace("SSL", "SASL_PLAINTEXT"),
    ),
    case(
        *TOPICS,
        exit=2,
        says="client configuration refused: No provider for SASL mechanism",
        config=_props().replace("PLAIN\n", "GSSAPI\n"),
    ),
    # the file itself
    case(
        *TOPICS,
        exit=2,
        says="cannot read config file kmigrate.yaml: not UTF-8 text",
        config=None,
        files={"kmigrate.yaml": NOT_UTF8},
    ),
    case(
        *CHECK,
        "--config",
        "latin1.yaml",
        exit=2,
        says="cannot read config file latin1.yaml: not UTF-8 text (byte 0xe9",
        config=None,
        files={"latin1.yaml": NOT_UTF8},
    ),
    case(
        *CHECK,
        exit=2,
        says="cannot read config file kmigrate.yaml: not text",
        config=None,
        files={"kmigrate.yaml": b"clusters:\n  a: \x00\x01\x02\n"},
    ),
    case(
        *CHECK, exit=2, says="kmigrate.yaml: bad YAML at line 3", config="clusters:\n  source: [\n"
    ),
    case(
        *CHECK,
        exit=2,
        says="environment variable NOPE_PASSWORD is not set (used in "
        "clusters.source.properties.sasl.password)",
        config=_props().replace("contract-literal-secret", "${NOPE_PASSWORD}"),
    ),
    case(*CHECK, exit=2, says="env_file", config="env_file: nope.env\n" + CONFIG),
    case(
        *CHECK,
        exit=2,
        says="clusters.source.timeout_s: input should be greater than 0",
        config=_props().replace("timeout_s: 2", "timeout_s: -1"),
    ),
    case(*CHECK, exit=2, says="no cluster configuration found", config=None),
    # binary and hand-broken plans
    case(
        "plan",
        "check",
        "plan.yaml",
        exit=2,
        says="cannot read plan plan.yaml: not UTF-8",
        files={"plan.yaml": bytes(range(128, 256))},
    ),
    case(
        "plan",
        "check",
        "plan.yaml",
        exit=2,
        says="cannot read plan plan.yaml: not text",
        files={"plan.yaml": b"name: x\x00\x01\n"},
    ),
    # clusters check: names, regexes, --config after the sub-command
    case(*CHECK, "nope", exit=2, says="unknown cluster 'nope'"),
    case(*CHECK, "source", "nope", exit=2, says="known clusters: source, target"),
    case(*CHECK, "--config", "missing.yaml", exit=2, says="config file missing.yaml"),
    case(*CHECK, "--topics", "(", exit=2, says="is not a regex"),
    case(*CHECK, "--groups", "[a", exit=2, says="is not a regex"),
    case(*CHECK, "--topics", exit=2, says="'--topics' requires an argument"),
    case(
        *CHECK,
        "source",
        exit=2,
        says="ssl.crl.location file crl.pem does not exist",
        config=_props("ssl.crl.location: crl.pem"),
    ),
]

test_bad_config = run_cases(CASES)
