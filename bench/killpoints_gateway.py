"""The gateway moves the kill-point sweep runs (bench/killpoints.py): a 4-partition topic
on the sandbox's `source`, served by a two-instance gateway (harness/gateway.py's
`running_gateway`), its producer and consumer group going through the gateway, moved to
`target` two partitions at a time (`gateway migrate --partitions 0,1`, then `2,3`). After
a kill the user runs the same command for the partitions not on the target yet.

Expected after: through the gateway every acknowledged record once and in order per
partition (virtual offsets: the origin's records, then the target's); every partition
written on the target; the source's metadata as before."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from killpoints import SECURE, TOPIC, Command, Setup, jars

from harness import userview
from harness.gateway import Gateway, running_gateway
from harness.gateway_traffic import route
from harness.killrun import kmigrate
from kmigrate.config import ClusterConfig, load_settings
from kmigrate.gateway.control.shared_state import Registry
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.sandbox import manager

PARTITIONS = 4


def gateway_setup(directory: Path) -> Setup:
    manager.up(directory, manager.UpRequest(secure=SECURE["on"]))
    source = load_settings(directory / "clusters.yaml").cluster("source")
    passwords = userview.furnish(source, jars(), topics=3, brokers=1)
    with ClusterAdmin(source) as admin:
        admin.create_topic(TOPIC, PARTITIONS, replication_factor=1)
    stack = ExitStack()
    (directory / "gw").mkdir()
    gw: Gateway = stack.enter_context(
        running_gateway(directory / "clusters.yaml", directory / "gw")
    )
    route(gw, TOPIC, "source")
    through = ClusterConfig(name="gateway", bootstrap_servers=gw.bootstrap, timeout_s=30)

    def move(partitions: list[int]) -> Command:
        def argv(which: list[int]) -> list[str]:
            return kmigrate(gw.config, "gateway", "migrate", "--topic", TOPIC, "--partitions",
                            ",".join(map(str, which)), "--cluster", "target", "--json")  # fmt: skip

        def left() -> list[str] | None:
            registry = Registry(gw.connect, "/kmigrate-gateway", "gw")
            try:
                table = registry.read_routes()
            finally:
                registry.close()
            todo = [p for p in partitions if table.cluster_of(TOPIC, p) != "target"]
            return argv(todo) if todo else None

        return Command(argv(partitions), left, 4.0)

    def moved() -> list[str]:
        registry = Registry(gw.connect, "/kmigrate-gateway", "gw")
        try:
            table = registry.read_routes()
        finally:
            registry.close()
        return [f"{TOPIC}[{p}] still written on {table.cluster_of(TOPIC, p)}"
                for p in range(PARTITIONS) if table.cluster_of(TOPIC, p) != "target"]  # fmt: skip

    return Setup(
        directory,
        source,
        [move([0, 1]), move([2, 3])],
        checks=moved,
        clients=through,
        close=stack.close,
        passwords=passwords,
    )
