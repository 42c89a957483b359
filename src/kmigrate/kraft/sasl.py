"""How KRaft controllers and brokers authenticate each other when the brokers' own
inter-broker listener uses SASL (pure): the controllers speak to the brokers on that
listener with its mechanism, and the brokers reach the controllers on a SASL_PLAINTEXT
controller listener with PLAIN, both as one user (the one clusters.yaml gives kmigrate
for the cluster, an inter-broker user's peer). PLAIN keeps its credentials in the
nodes' own configuration: controllers cannot check SCRAM credentials, which live in the
metadata they serve. Nothing reaches the controllers anonymously.

A plan holds :data:`SECRET` where the password goes; it is put in only when a node's
configuration is written (the plan, the store and the journal never hold it)."""

from __future__ import annotations

SECRET = "${KMIGRATE_SASL_PASSWORD}"
CONTROLLER_MECHANISM = "PLAIN"
_PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def controller_side(user: str, listener: str, mechanism: str) -> dict[str, str]:
    """A controller's settings: it checks the brokers' PLAIN logins on the controller
    listener, and logs in to the brokers' ``listener`` with ``mechanism``."""
    module = _SCRAM if mechanism.upper().startswith("SCRAM") else _PLAIN
    return {
        "sasl.mechanism.controller.protocol": CONTROLLER_MECHANISM,
        "listener.name.controller.sasl.enabled.mechanisms": CONTROLLER_MECHANISM,
        "listener.name.controller.plain.sasl.jaas.config": (
            f'{_PLAIN} required username="{user}" password="{SECRET}" user_{user}="{SECRET}";'
        ),
        "sasl.mechanism.inter.broker.protocol": mechanism,
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
