"""The harnesses shared by the tests and the benchmarks: kill runs (killpoints, killrun),
the user's view of a cluster (userview), other ecosystems' clients (ecosystems), the
gateway under test (gateway, gateway_traffic), and running the CLI as a user does
(helpers, zygote).

They live here, not in tests/, so that nothing imports tests/ or bench/: not kmigrate,
not the benchmarks, not tools/ and not these harnesses (ruff's banned-api, TID251,
enforces it for the test package).
"""
