"""What every gateway instance shares, and the use cases that change it: the routing
table and partition moves (routes, partition_moves, mover, aging, fences, marks), producer
id translations, the ZooKeeper registry, the DIS API, and the commands `kmigrate gateway`
and `kmigrate serve` share (setup, routing, moving, audit)."""
