"""Moving replicas between brokers (seed 004): the planner (pure), the executor."""
