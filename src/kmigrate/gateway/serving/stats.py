"""How long the gateway takes per request, per API: a bounded sample, summarised as
percentiles in the instance's log when it stops (and for `gateway status` later). Pure."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

SAMPLE = 20_000


@dataclass
class Timings:
    """Per API: requests seen and a uniform sample of their durations (seconds)."""

    counts: dict[str, int] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)
    _random: random.Random = field(default_factory=lambda: random.Random(0), repr=False)

    def record(self, api: str, seconds: float) -> None:
        seen = self.counts[api] = self.counts.get(api, 0) + 1
        sample = self.samples.setdefault(api, [])
        if len(sample) < SAMPLE:
            sample.append(seconds)
        else:  # reservoir sampling keeps every request equally likely to be in it
            slot = self._random.randrange(seen)
            if slot < SAMPLE:
                sample[slot] = seconds

    def summary(self) -> dict[str, dict[str, float]]:
        """Per API: count, p50, p99 and max in milliseconds."""
        out = {}
        for api, sample in sorted(self.samples.items()):
            ordered = sorted(sample)
            out[api] = {
                "count": self.counts[api],
                "p50_ms": round(1000 * ordered[len(ordered) // 2], 2),
                "p99_ms": round(1000 * ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)], 2),
                "max_ms": round(1000 * ordered[-1], 2),
            }
        return out
