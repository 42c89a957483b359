"""The admin layer: the only code in kmigrate that calls Kafka's admin API.

Every method blocks until the cluster answered (or the cluster's ``timeout_s``
passed), returns frozen values from :mod:`kmigrate.model.cluster`, and raises only
kmigrate errors. Use it as a context manager or call :meth:`ClusterAdmin.close`.

:class:`ClusterAdmin` is one object over one client; each concern lives in its own
module and shares the client through :class:`~kmigrate.kafka.admin.connection.AdminConnection`:

- ``brokers``: the cluster, its brokers and their configuration (``isolated``: the
  one call run in a child process)
- ``configs``: dynamic topic and broker configs
- ``topics``: list, describe, create, grow, delete (one at a time or in bulk)
- ``offsets``: watermarks, offsets by time, deleting records
- ``groups``: consumer groups, committed offsets and lag; many groups in a constant
  number of round trips
- ``acls``: ACL bindings
- ``users``: SCRAM credentials
- ``authorization``: the authorizer's answers, asked without changing anything
- ``authorized``: the operations Kafka reports the principal may perform (cluster,
  topics, groups) and the broker settings that tell its mode and version
"""

from __future__ import annotations

from functools import partial

from kmigrate.config import ClusterConfig
from kmigrate.kafka.admin.acls import Acls
from kmigrate.kafka.admin.authorization import Authorization
from kmigrate.kafka.admin.authorized import Authorized, broker_facts
from kmigrate.kafka.admin.brokers import Brokers
from kmigrate.kafka.admin.configs import Configs
from kmigrate.kafka.admin.connection import AdminConnection
from kmigrate.kafka.admin.groups import Groups
from kmigrate.kafka.admin.offsets import Offsets
from kmigrate.kafka.admin.topics import Topics
from kmigrate.kafka.admin.users import Users


class ClusterAdmin:
    """Admin operations on one cluster: each method is its concern's (see the module)."""

    def __init__(self, cluster: ClusterConfig) -> None:
        self.cluster = cluster
        self._conn = conn = AdminConnection(cluster)
        brokers, configs, offsets = Brokers(conn), Configs(conn), Offsets(conn)
        topics, groups, acls = Topics(conn, brokers, configs), Groups(conn, offsets), Acls(conn)

        self.describe_cluster = brokers.describe_cluster
        self.cluster_metadata = brokers.cluster_metadata
        self.broker_config = brokers.broker_config
        self.hidden_broker_configs = brokers.hidden_broker_configs
        self.default_replication = brokers.default_replication

        self.dynamic_configs = configs.dynamic_configs
        self.set_configs = configs.set_configs
        self.topic_configs = configs.topic_configs
        self.broker_configs = configs.broker_configs

        self.list_topics = topics.list_topics
        self.describe_topic = topics.describe_topic
        self.describe_topics = topics.describe_topics
        self.describe_topics_if_present = topics.describe_topics_if_present
        self.create_topic = topics.create_topic
        self.create_topic_like = topics.create_topic_like
        self.create_topics_like = topics.create_topics_like
        self.create_partitions = topics.create_partitions
        self.grow_topics = topics.grow_topics
        self.delete_topics = topics.delete_topics

        self.watermarks = offsets.watermarks
        self.offsets_for_timestamp = offsets.offsets_for_timestamp
        self.partition_offsets = offsets.partition_offsets
        self.offsets_for_times = offsets.offsets_for_times
        self.delete_records = offsets.delete_records

        self.list_groups = groups.list_groups
        self.describe_group = groups.describe_group
        self.describe_groups = groups.describe_groups
        self.committed_offsets = groups.committed_offsets
        self.alter_group_offsets = groups.alter_group_offsets
        self.alter_groups_offsets = groups.alter_groups_offsets

        self.list_acls = acls.list_acls
        self.create_acls = acls.create_acls
        self.delete_acls = acls.delete_acls

        self.authorization_answer = Authorization(conn).answer
        authorized = Authorized(conn)
        self.cluster_operations = authorized.cluster_operations
        self.topic_operations = authorized.topic_operations
        self.group_operations = authorized.group_operations
        self.broker_facts = partial(broker_facts, brokers)

        users = Users(conn)
        self.scram_credentials = users.scram_credentials
        self.upsert_scram_credential = users.upsert_scram_credential

    def __enter__(self) -> ClusterAdmin:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()
