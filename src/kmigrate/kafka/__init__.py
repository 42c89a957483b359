"""Kafka access outside Spark: the admin layer, client construction, error translation
and the retry policy (kept free of heavy imports: Spark tasks use ``retry``)."""
