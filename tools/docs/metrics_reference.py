"""The metrics' reference, from the registry `kmigrate serve` exposes at /metrics: every
metric family with its type, labels and help, as a scrape names them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools.docs.markdown import cell, code, table

# How a family's samples are named in a scrape, after the family's name (Prometheus'
# text format): a counter's value is NAME_total.
_SAMPLE_SUFFIX = {"counter": "_total"}


@dataclass(frozen=True)
class Family:
    """One metric family: its name in a scrape, type, label names and help."""

    name: str
    type: str
    labels: tuple[str, ...]
    help: str


def families(registry: Any) -> list[Family]:
    """Every family ``registry`` exposes, by name, even with no sample yet (a server
    with no link has no per-link samples, but the same families)."""
    found = []
    for collector in list(registry._collector_to_names):  # no public listing of them
        for metric in collector.collect():
            labels = _label_names(collector, metric)
            suffix = _SAMPLE_SUFFIX.get(metric.type, "")
            found.append(Family(metric.name + suffix, metric.type, labels, metric.documentation))
    return sorted(found, key=lambda family: family.name)


def _label_names(collector: Any, metric: Any) -> tuple[str, ...]:
    """A family's label names: a custom collector's families carry them; a client
    library metric (Counter, Gauge, ...) is itself the collector that knows them."""
    names = getattr(metric, "_labelnames", None) or getattr(collector, "_labelnames", ())
    return tuple(names)


def served_registry() -> Any:
    """The registry a `kmigrate serve` process exposes, over an empty in-memory store and
    a sampler that has sampled nothing (no cluster is asked)."""
    from kmigrate.serve.metrics import Metrics
    from kmigrate.serve.sampler import Sample
    from kmigrate.store import open_store

    class _NoSampler:  # what the metrics read: the last sample and the store
        store = open_store("sqlite://")

        def current(self) -> Sample:
            return Sample(0, 0)

    return Metrics(_NoSampler(), dict).registry  # type: ignore[arg-type]


def render(found: list[Family]) -> str:
    """The table of families: name, type, labels, help."""
    rows = [
        [code(f.name), f.type, ", ".join(code(label) for label in f.labels), cell(f.help)]
        for f in found
    ]
    return table(["Metric", "Type", "Labels", "Help"], rows) + "\n"
