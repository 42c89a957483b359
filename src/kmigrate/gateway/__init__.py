"""The gateway: a Kafka-protocol endpoint in front of several backend clusters.

    protocol/  Kafka's protocol as the gateway speaks it: frames and messages (wire,
               entities), record batches (batches, records), and the connections to
               backend brokers (backend, sasl)
    control/   state shared by every instance, and the use cases that change it: the
               routing table, partition moves (mover, aging, fences, marks), producer id
               translations, the ZooKeeper registry, the DIS API; `kmigrate gateway` and
               `kmigrate serve` call these
    serving/   one running instance: the asyncio server, one module per API family over
               a small state object, the split of partitioned requests, virtual offsets

Arrows point down that list's reverse: serving uses control and protocol, control uses
protocol, protocol uses neither.
"""
