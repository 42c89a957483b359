"""Kafka's protocol as the gateway speaks it, to clients and to backend brokers: frames and
message bodies (wire, entities), record batches (batches, records), SASL and the
connections to backend brokers (sasl, backend). Nothing here knows routes or moves."""
