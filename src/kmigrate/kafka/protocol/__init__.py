"""The Kafka protocol spoken by kmigrate itself (kio's messages): frames (``wire``), one
pipelined connection per broker, logged in with SASL (``link``), and a cluster's
connections kept per broker with any-broker calls (``brokers``). The gateway serves
clients with it; the mirror's byte copy reads and writes record batches with it
(kmigrate.codec)."""
