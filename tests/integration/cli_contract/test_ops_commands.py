"""Bad input to `zk`, `kraft`, `gateway` and `sandbox`: refused before anything is
contacted or written (see harness.py). Sandbox cases pass `--dir` inside the case's
folder; none of them starts a process."""

from __future__ import annotations

from tests.integration.cli_contract.harness import case, run_cases

# A ZooKeeper move plan of the harness's cluster `source` (valid; nothing answers it).
ZK_PLAN = """\
kind: kmigrate-zookeeper-move
kafka: source
chroot: /kafka
source: {name: old, connect: "127.0.0.1:3", members: ["server.1=127.0.0.1:5:6:participant;127.0.0.1:3"]}
target: {name: new, connect: "127.0.0.1:4", members: ["server.4=127.0.0.1:7:8:participant;127.0.0.1:4"]}
join_first: []
join_after_split: [4]
brokers: [1]
broker_hosts: {1: 127.0.0.1}
target_connect: "127.0.0.1:4/kafka"
steps: [{phase: join, action: add server 4, guard: quorum}]
"""

# A KRaft migration plan of `source` (valid; nothing answers it).
KRAFT_PLAN = """\
kind: kmigrate-kraft-migration
kafka: source
cluster_id: abc
zookeeper_connect: "127.0.0.1:3/kafka"
brokers: {1: "127.0.0.1:1"}
controllers: [{node_id: 3000, host: 127.0.0.1, port: 19000}]
controller_config: {}
roll1: {}
roll2: {}
finalize: {}
protocol_map_before: null
"""

BINARY = b"\x00\x01\x02kmigrate\xff\xfe"
LATIN1 = "kafka: söurce\n".encode("latin-1")

ZK = [
    # zk plan
    case("zk", "plan", "--source-ensemble", "old", "--target-ensemble", "new", "-o", "p.yaml",
         exit=2, says="Missing option '--cluster'"),
    case("zk", "plan", "--cluster", "source", "--target-ensemble", "new", "-o", "p.yaml",
         exit=2, says="--source-ensemble"),
    case("zk", "plan", "--cluster", "nope", "--source-ensemble", "old", "--target-ensemble",
         "new", "-o", "p.yaml", exit=2, says="nope"),
    case("zk", "plan", "--cluster", "source", "--source-ensemble", "old", "--target-ensemble",
         "new", "--chroot", "kafka", "-o", "p.yaml", exit=2, says="--chroot 'kafka'"),
    case("zk", "plan", "--cluster", "source", "--source-ensemble", "old", "--target-ensemble",
         "new", "--chroot", "/kafka/", "-o", "p.yaml", exit=2, says="--chroot '/kafka/'"),
    case("zk", "plan", "--kafka", "source", "--from", "old", "--to", "new", "--chroot",
         "/a//b", "-o", "p.yaml", exit=2, says="--chroot"),
    case("zk", "plan", "--cluster", "source", "--source-ensemble", "old", "--target-ensemble",
         "new", "-o", "p.yaml", exit=5, says="p.yaml exists", files={"p.yaml": "x"}),
    case("zk", "plan", "--cluster", "source", "--source-ensemble", "old", "--target-ensemble",
         "new", "-o", "nofolder/p.yaml", exit=2, says="nofolder"),
    # zk migrate
    case("zk", "migrate", "missing.yaml", exit=4, says="plan file missing.yaml does not exist"),
    case("zk", "migrate", "p.yaml", exit=2, says="p.yaml is not a plan file",
         files={"p.yaml": BINARY}),
    case("zk", "migrate", "p.yaml", exit=2, says="p.yaml is not a plan file",
         files={"p.yaml": LATIN1}),
    case("zk", "migrate", "p.yaml", exit=2, says="p.yaml: bad YAML",
         files={"p.yaml": "kind: [unclosed\n"}),
    case("zk", "migrate", "p.yaml", exit=2, says="not a ZooKeeper move plan",
         files={"p.yaml": "- a\n- b\n"}),
    case("zk", "migrate", "p.yaml", exit=2, says="not a ZooKeeper move plan",
         files={"p.yaml": KRAFT_PLAN}),
    case("zk", "migrate", "p.yaml", exit=2, says="field 'brokers'",
         files={"p.yaml": ZK_PLAN.replace("brokers: [1]", "brokers: one")}),
    case("zk", "migrate", "p.yaml", exit=2, says="unknown cluster 'nope'",
         files={"p.yaml": ZK_PLAN.replace("kafka: source", "kafka: nope")}),
    case("zk", "migrate", "p.yaml", exit=2, says="not a sandbox cluster",
         files={"p.yaml": ZK_PLAN}),
    case("zk", "migrate", "p.yaml", "--restart-command", "true", exit=2,
         says="--zk-stop-command", files={"p.yaml": ZK_PLAN}),
    case("zk", "migrate", "p.yaml", "--restart-command", "restart {hots}", "--zk-stop-command",
         "true", "--zk-start-command", "true", exit=2, says="unknown placeholder {hots}",
         files={"p.yaml": ZK_PLAN}),
    case("zk", "migrate", "p.yaml", "--timeout", "soon", exit=2, says="not a duration",
         files={"p.yaml": ZK_PLAN}),
    case("zk", "migrate", "p.yaml", "--rollback", "--yes", exit=2, says="not a sandbox cluster",
         files={"p.yaml": ZK_PLAN}),
    # zk status / history / cleanup
    case("zk", "status", exit=2, says="Missing option '--cluster'"),
    case("zk", "status", "--cluster", "nope", exit=2, says="unknown cluster 'nope'"),
    case("zk", "history", "--kafka", "nope", exit=2, says="unknown cluster 'nope'"),
    case("zk", "cleanup", "--cluster", "nope", "--yes", exit=2, says="unknown cluster 'nope'"),
]

KRAFT = [
    case("kraft", "plan", "-o", "k.yaml", exit=2, says="Missing option '--cluster'"),
    case("kraft", "plan", "--cluster", "nope", "-o", "k.yaml", exit=2, says="nope"),
    case("kraft", "plan", "--cluster", "source", "--controllers", "2", "-o", "k.yaml", exit=2,
         says="give an odd number"),
    case("kraft", "plan", "--cluster", "source", "--controllers", "0", "-o", "k.yaml", exit=2,
         says="--controllers"),
    case("kraft", "plan", "--kafka", "source", "--controllers", "11", "-o", "k.yaml", exit=2,
         says="--controllers"),
    case("kraft", "plan", "--cluster", "source", "--controllers", "1", "--controller",
         "127.0.0.1", "-o", "k.yaml", exit=2, says="--controller '127.0.0.1'"),
    case("kraft", "plan", "--cluster", "source", "--controllers", "1", "--controller",
         "127.0.0.1:70000", "-o", "k.yaml", exit=2, says="port from 1 to 65535"),
    case("kraft", "plan", "--cluster", "source", "--controllers", "3", "--controller",
         "127.0.0.1:9093", "-o", "k.yaml", exit=2, says="--controller given 1 time(s)"),
    case("kraft", "plan", "--cluster", "source", "--authorizer-setting", "nonsense", "-o",
         "k.yaml", exit=2, says="--authorizer-setting 'nonsense'"),
    case("kraft", "plan", "--cluster", "source", "--authorizer-setting", "foo=bar", "-o",
         "k.yaml", exit=2, says="--authorizer-setting 'foo=bar'"),
    case("kraft", "plan", "--cluster", "source", "--probe-as", "nope", "-o", "k.yaml", exit=2,
         says="nope"),
    case("kraft", "plan", "--cluster", "source", "-o", "k.yaml", exit=5, says="k.yaml exists",
         files={"k.yaml": KRAFT_PLAN}),
    case("kraft", "plan", "--cluster", "source", "-o", ".", exit=2, says="is a folder"),
    case("kraft", "migrate", "missing.yaml", exit=4, says="plan file missing.yaml does not exist"),
    case("kraft", "migrate", "k.yaml", exit=2, says="k.yaml is not a plan file",
         files={"k.yaml": BINARY}),
    case("kraft", "migrate", "k.yaml", exit=2, says="not a KRaft migration plan",
         files={"k.yaml": ZK_PLAN}),
    case("kraft", "migrate", "k.yaml", exit=2, says="field 'controllers",
         files={"k.yaml": KRAFT_PLAN.replace("port: 19000", "port: many")}),
    case("kraft", "migrate", "k.yaml", exit=2, says="unknown cluster 'nope'",
         files={"k.yaml": KRAFT_PLAN.replace("kafka: source", "kafka: nope")}),
    case("kraft", "migrate", "k.yaml", exit=2, says="not a sandbox cluster",
         files={"k.yaml": KRAFT_PLAN}),
    case("kraft", "migrate", "k.yaml", "--until", "never", exit=2, says="--until",
         files={"k.yaml": KRAFT_PLAN}),
    case("kraft", "migrate", "k.yaml", "--timeout", "0", exit=2, says="not a duration",
         files={"k.yaml": KRAFT_PLAN}),
    case("kraft", "migrate", "k.yaml", "--broker-command", "x {nope}", "--controller-command",
         "y", exit=2, says="unknown placeholder {nope}", files={"k.yaml": KRAFT_PLAN}),
    case("kraft", "migrate", "k.yaml", "--broker-command", "x {host", "--controller-command",
         "y", exit=2, says="--broker-command", files={"k.yaml": KRAFT_PLAN}),
    case("kraft", "migrate", "k.yaml", "--broker-command", "x", exit=2,
         says="--controller-command", files={"k.yaml": KRAFT_PLAN}),
    case("kraft", "revert", "missing.yaml", "--yes", exit=4, says="missing.yaml does not exist"),
    case("kraft", "revert", "k.yaml", "--dry-run", exit=2, says="not a sandbox cluster",
         files={"k.yaml": KRAFT_PLAN}),
    case("kraft", "finalize", "k.yaml", "--yes", exit=2, says="k.yaml is not a plan file",
         files={"k.yaml": LATIN1}),
    case("kraft", "status", "--cluster", "nope", exit=2, says="unknown cluster 'nope'"),
    case("kraft", "history", exit=2, says="Missing option '--cluster'"),
]  # fmt: skip

test_zk = run_cases(ZK)
test_kraft = run_cases(KRAFT)
