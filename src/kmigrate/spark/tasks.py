"""Running small work items as Spark tasks.

The items are plain picklable values (offset ranges with what a task needs to know);
the function must live in an importable kmigrate module, never in ``__main__``, so
that Python workers import it once and keep their cached Kafka clients across tasks.
Spark schedules the tasks over its executors on any master and fails the job when a
task fails (one attempt: ``spark.task.maxFailures=1``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pyspark import SparkContext

Item = TypeVar("Item")
Result = TypeVar("Result")


def spread(sizes: Sequence[int], slots: int) -> list[list[int]]:
    """Indexes of ``sizes`` grouped into at most ``slots`` groups of similar total size
    (largest first onto the lightest group). Pure.

    Every item stays whole: a group is worked through by one task, item after item.
    """
    groups: list[list[int]] = [[] for _ in range(min(slots, len(sizes)))]
    totals = [0] * len(groups)
    for index in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        lightest = totals.index(min(totals))
        groups[lightest].append(index)
        totals[lightest] += sizes[index]
    return groups


def run_tasks(
    spark: SparkContext,
    function: Callable[[Iterable[Item]], Iterator[Result]],
    items: Sequence[Item],
    sizes: Sequence[int],
    *,
    description: str,
) -> list[Result]:
    """``function`` applied to every item; all results, in no set order.

    Items are spread over as many tasks as Spark runs at once (one Spark job, one
    batch of tasks, no second wave waiting for the slowest of the first): a Spark job
    costs a fixed ~0.1 s, which dominates small batches.
    """
    if not items:
        return []
    groups = spread(sizes, spark.defaultParallelism)
    spark.setJobDescription(description)
    rdd: Any = spark.parallelize([[items[i] for i in g] for g in groups], len(groups))
    return list(rdd.mapPartitions(lambda parts: function(i for p in parts for i in p)).collect())


def warm_up(spark: SparkContext, modules: Sequence[str]) -> None:
    """Start every Python worker and import ``modules`` there, so that the first real
    batch does not pay seconds of worker start-up (a record arriving then would)."""
    slots = spark.defaultParallelism
    spark.setJobDescription("kmigrate warm-up")
    spark.parallelize(range(slots), slots).foreach(lambda _i: _import(modules))


def _import(modules: Sequence[str]) -> None:
    for name in modules:
        importlib.import_module(name)
