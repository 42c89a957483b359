"""SCRAM users: which credentials exist (mechanism and iterations; Kafka never returns a
password or a salted hash) and storing one. Works on ZooKeeper-mode and KRaft clusters."""

from __future__ import annotations

from confluent_kafka.admin import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from kmigrate.kafka.admin.connection import AdminConnection, enum_name


class Users:
    """The cluster's SCRAM credentials."""

    def __init__(self, conn: AdminConnection) -> None:
        self._conn = conn

    def scram_credentials(self) -> dict[str, list[str]]:
        """Each user's credentials as "MECHANISM/ITERATIONS" ("SCRAM-SHA-256/8192"),
        sorted; users without one are not listed."""
        conn = self._conn
        found = conn.briefly(
            lambda: conn.wait(
                conn.client.describe_user_scram_credentials(request_timeout=conn.timeout),
                "describe SCRAM credentials",
            )
        )
        return {
            user: sorted(
                f"{enum_name(i.mechanism).replace('_', '-')}/{i.iterations}"
                for i in description.scram_credential_infos
            )
            for user, description in sorted(found.items())
        }

    def upsert_scram_credential(
        self, user: str, mechanism: str, iterations: int, password: str
    ) -> None:
        """Create or replace ``user``'s credential for ``mechanism`` ("SCRAM-SHA-256" or
        "SCRAM-SHA-512"); the password goes to the cluster only. Returns once describing
        shows the credential, or after the cluster's timeout: on KRaft the broker
        describes what it has applied, a moment after the controller answered."""
        info = ScramCredentialInfo(ScramMechanism[mechanism.replace("-", "_")], iterations)
        change = UserScramCredentialUpsertion(user, info, password.encode())
        conn = self._conn
        futures = conn.client.alter_user_scram_credentials([change], request_timeout=conn.timeout)
        conn.wait_all(futures, f"alter the SCRAM credentials of {user}")
        described = f"{mechanism}/{iterations}"
        conn.until_shown(lambda: described in self.scram_credentials().get(user, ()))
