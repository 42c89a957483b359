"""How KRaft controllers and brokers authenticate each other (pure). When the brokers' own
inter-broker listener uses SASL, the controllers speak to the brokers on that listener
with its mechanism, and the brokers reach the controllers on a SASL_PLAINTEXT controller
listener (SASL_SSL where the brokers talk SASL_SSL) with PLAIN, both as one user (the
one clusters.yaml gives kmigrate for the cluster, an inter-broker user's peer). When
they talk PLAINTEXT but the controllers need a super user to reach them (kraft.trust),
only the controller listener is SASL_PLAINTEXT, with kmigrate's own controller principal
and a secret generated for it. PLAIN keeps its credentials in the nodes' own
configuration: controllers cannot check SCRAM credentials, which live in the metadata
they serve.

A plan holds :data:`SECRET` where the password goes; it is put in only when a node's
configuration is written (the plan, the store and the journal never hold it)."""

from __future__ import annotations

SECRET = "${KMIGRATE_SASL_PASSWORD}"
CONTROLLER_MECHANISM = "PLAIN"
_PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def controller_listener(user: str) -> dict[str, str]:
    """A controller's controller listener: it checks PLAIN logins of ``user`` (brokers
    and the other controllers), and logs in to the other controllers as ``user``."""
    return {
        "sasl.mechanism.controller.protocol": CONTROLLER_MECHANISM,
        "listener.name.controller.sasl.enabled.mechanisms": CONTROLLER_MECHANISM,
        "listener.name.controller.plain.sasl.jaas.config": (
            f'{_PLAIN} required username="{user}" password="{SECRET}" user_{user}="{SECRET}";'
        ),
    }


def controller_side(user: str, listener: str, mechanism: str) -> dict[str, str]:
    """A controller's settings on a SASL cluster: its controller listener, and it logs
    in to the brokers' ``listener`` with ``mechanism``."""
    module = _SCRAM if mechanism.upper().startswith("SCRAM") else _PLAIN
    return controller_listener(user) | {
        "sasl.mechanism.inter.broker.protocol": mechanism,
        "sasl.enabled.mechanisms": mechanism,  # Kafka requires it of an inter-broker client
        f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config": (
            f'{module} required username="{user}" password="{SECRET}";'
        ),
    }


def broker_side(user: str) -> dict[str, str]:
    """A broker's settings: it logs in to the controllers with PLAIN."""
    return {
        "sasl.mechanism.controller.protocol": CONTROLLER_MECHANISM,
        "listener.name.controller.plain.sasl.jaas.config": (
            f'{_PLAIN} required username="{user}" password="{SECRET}";'
        ),
    }


def revealed(config: dict[str, str], password: str) -> dict[str, str]:
    """``config`` with the password where the plan holds its place."""
    return {k: v.replace(SECRET, password) for k, v in config.items()}


def needs_secret(config: dict[str, str]) -> bool:
    return any(SECRET in v for v in config.values())
