"""The Kafka protocol spoken by kmigrate itself (kio's messages): frames and one
pipelined connection per broker, logged in with SASL. The gateway serves clients with
it; the mirror's byte copy reads and writes record batches with it (kmigrate.codec)."""
