"""The bytes of the Kafka protocol as values, pure: record batches (read, rewritten for
another producer, filtered as read_committed reads them), records, SASL client and
server messages. The gateway and the mirror's byte copy build on them; no I/O here."""
