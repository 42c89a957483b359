"""Running small work items as Spark tasks: one Spark partition per item.

The items are plain picklable values (offset ranges with what a task needs to know);
the function must live in an importable kmigrate module, never in ``__main__``, so
that Python workers import it once and keep their cached Kafka clients across tasks.
Spark schedules the items over its executors on any master and fails the job when a
task fails (one attempt: ``spark.task.maxFailures=1``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from pyspark import SparkContext

Item = TypeVar("Item")
Result = TypeVar("Result")


def run_tasks(
    spark: SparkContext,
    function: Callable[[Iterable[Item]], Iterator[Result]],
    items: Sequence[Item],
    *,
    description: str,
) -> list[Result]:
    """``function`` applied to each item in its own task; all results, in no set order.

    Items are scheduled in the order given (put the biggest first so that the last
    task to start is a short one).
    """
    if not items:
        return []
    spark.setJobDescription(description)
    rdd: Any = spark.parallelize(list(items), len(items))
    return list(rdd.mapPartitions(function).collect())
