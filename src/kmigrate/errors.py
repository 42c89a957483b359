"""kmigrate's error tree: every failure a user can act on is one of these.

    KMigrateError                      code             exit
    ├── ConfigError                    config           2
    │   └── UnknownClusterError        unknown-cluster  2
    ├── ClusterError                   cluster          3
    │   ├── ClusterUnavailableError    unavailable      3   (passes on its own: retried
    │   │   └── ClusterUnreachableError unreachable    3    by long-running processes)
    │   ├── OutageTooLongError         outage           3
    │   ├── RegistryRefusedError       schema-registry  3
    │   ├── AuthenticationError        authentication   3
    │   └── AuthorizationError         authorization    3
    ├── NotFoundError                  not-found        4
    │   ├── TopicNotFoundError         topic-not-found  4
    │   └── GroupNotFoundError         group-not-found  4
    ├── ConflictError                  conflict         5
    │   ├── TopicExistsError           topic-exists     5
    │   └── GroupActiveError           group-active     5
    ├── KafkaOperationError            kafka            6
    │   └── CommandFailedError         command-failed   6   (an operator's template)
    ├── SandboxError                   sandbox          7
    │   ├── JarsUnavailableError       jars             7
    │   └── BrokerStartError           broker-start     7
    ├── StoreError                     store            8
    └── MirrorError                    mirror           9
        ├── ForeignWriteError          foreign-write    9
        ├── DataLossError              data-loss        9
        └── MirrorRunningError         mirror-running   9

Each message is one line that names what to fix. Messages never contain secrets:
callers build them from names and addresses, never from client configs. The
domain raises these; only cli/ turns them into exit codes (via ``exit_code``).
"""

from __future__ import annotations


class KMigrateError(Exception):
    """Root of every error kmigrate reports to a user."""

    code = "error"
    exit_code = 1

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        # Extra lines (e.g. a broker's last log lines) shown under the message.
        self.detail = detail

    def __str__(self) -> str:
        return self.message


class ConfigError(KMigrateError):
    """The command line, a file kmigrate reads (clusters.yaml, a plan) or a client
    property is wrong; the message names what to fix."""

    code = "config"
    exit_code = 2


class UnknownClusterError(ConfigError):
    """A cluster or ZooKeeper ensemble name that the configuration does not define."""

    code = "unknown-cluster"


class ClusterError(KMigrateError):
    """A cluster cannot be used as asked: what it lacks or refused is in the message."""

    code = "cluster"
    exit_code = 3


class ClusterUnavailableError(ClusterError):
    """A condition that passes on its own: a broker restarting, a leader election, a
    coordinator moving. One-shot commands report it; long-running processes wait it out.

    (kmigrate.waiting waits.) ``condition`` says what, in a few words, for status
    lines."""

    code = "unavailable"

    def __init__(
        self, message: str, *, cluster: str, condition: str, detail: str | None = None
    ) -> None:
        super().__init__(message, detail=detail)
        self.cluster = cluster
        self.condition = condition


class ClusterUnreachableError(ClusterUnavailableError):
    """No broker (or ZooKeeper server) answered within the cluster's timeout."""

    code = "unreachable"


class OutageTooLongError(ClusterError):
    """A cluster stayed unavailable past the process's deadline (--max-unavailable)."""

    code = "outage"


class RegistryRefusedError(ClusterError):
    """A Schema Registry answered a request with an error of its own (HTTP status and
    Confluent's error code kept for callers that expect one)."""

    code = "schema-registry"

    def __init__(self, message: str, *, status: int, error_code: int | None) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code


class AuthenticationError(ClusterError):
    """The cluster rejected kmigrate's credentials (SASL or TLS)."""

    code = "authentication"


class AuthorizationError(ClusterError):
    """kmigrate's principal lacks a permission (an ACL) the command needs."""

    code = "authorization"


class NotFoundError(KMigrateError):
    """A named thing does not exist: a link, migration, plan file, operation, ..."""

    code = "not-found"
    exit_code = 4


class TopicNotFoundError(NotFoundError):
    """A named topic does not exist on the cluster."""

    code = "topic-not-found"


class GroupNotFoundError(NotFoundError):
    """A named consumer group does not exist on the cluster."""

    code = "group-not-found"


class ConflictError(KMigrateError):
    """The state does not allow it now: something exists already, or another phase
    or process is under way."""

    code = "conflict"
    exit_code = 5


class TopicExistsError(ConflictError):
    """The topic to create exists already."""

    code = "topic-exists"


class GroupActiveError(ConflictError):
    """The consumer group has members; it can only be moved while stopped."""

    code = "group-active"


class NotTranslatableError(ConflictError):
    """A group position the offset map cannot translate exactly (yet)."""

    code = "not-translatable"


class GroupMovedOnError(ConflictError):
    """The group consumed on the target after kmigrate committed it there."""

    code = "group-moved-on"


class KafkaOperationError(KMigrateError):
    """Kafka refused or failed an operation for another reason (named in the message)."""

    code = "kafka"
    exit_code = 6


class CommandFailedError(KafkaOperationError):
    """An operator's command (a restart template) exited non-zero or timed out."""

    code = "command-failed"


class SandboxError(KMigrateError):
    """The local sandbox cannot do it: nothing runs there, or a process did not start."""

    code = "sandbox"
    exit_code = 7


class JarsUnavailableError(SandboxError):
    """Kafka's or ZooKeeper's jars cannot be fetched from Maven Central."""

    code = "jars"


class BrokerStartError(SandboxError):
    """A sandbox broker or ZooKeeper server did not start (its last log lines follow)."""

    code = "broker-start"


class StoreError(KMigrateError):
    """The metadata store cannot be opened or written."""

    code = "store"
    exit_code = 8


class MirrorError(KMigrateError):
    """The mirror stopped because continuing could lose or repeat a record."""

    code = "mirror"
    exit_code = 9


class ForeignWriteError(MirrorError):
    """Something other than the mirror wrote to a mirror topic."""

    code = "foreign-write"


class DataLossError(MirrorError):
    """Source retention deleted records before the mirror copied them."""

    code = "data-loss"


class MirrorRunningError(MirrorError):
    """Another mirror process already runs this link."""

    code = "mirror-running"
