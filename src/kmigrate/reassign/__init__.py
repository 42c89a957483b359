"""Moving replicas between brokers (seed 004): the planner (pure), the executor, and the
use cases `reassign` and `brokers` call (`applied`: plan, start, follow, cancel;
`brokers`: what each broker holds)."""
