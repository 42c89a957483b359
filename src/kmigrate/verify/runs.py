"""The two verifications, each from the clusters' names to its report: what a link
mirrored (the ranges its offset map says were copied and both clusters still hold;
`kmigrate verify --link` and `kmigrate serve`), and two clusters' topics compared from a
position with no map (`kmigrate verify --source A --target B --topics REGEX`)."""

from __future__ import annotations

import re
from collections.abc import Callable

from kmigrate.config import Settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.links import Link
from kmigrate.spark.session import build_context
from kmigrate.store import Store
from kmigrate.verify.job import (
    Sides,
    TopicPartition,
    plan_link,
    plan_position,
    verify,
)
from kmigrate.verify.ranges import PartitionCheck
from kmigrate.verify.report import VerifyReport


def verify_link(
    settings: Settings,
    store: Store,
    link: Link,
    pattern: re.Pattern[str] | None,
    progress: Callable[[str], None],
    driver_offsets: int | None = None,
) -> VerifyReport:
    """The ranges the link's offset map says were copied (of ``pattern``'s topics)."""
    return _between(
        settings, (link.source, link.target),
        lambda sides: plan_link(store, link, pattern, sides),
        link.name, progress, driver_offsets,
    )  # fmt: skip


def verify_position(
    settings: Settings,
    source: str,
    target: str,
    pattern: re.Pattern[str],
    position: str,
    start_file: dict[TopicPartition, tuple[int, int]] | None,
    progress: Callable[[str], None],
    driver_offsets: int | None = None,
) -> VerifyReport:
    """``pattern``'s topics on both clusters from ``position`` (earliest, @EPOCH_MS, or
    the ranges of ``start_file``), partition by partition."""
    return _between(
        settings, (source, target),
        lambda sides: plan_position(pattern, position, sides, start_file),
        None, progress, driver_offsets,
    )  # fmt: skip


def _between(
    settings: Settings,
    clusters: tuple[str, str],
    plan: Callable[[Sides], list[PartitionCheck]],
    link: str | None,
    progress: Callable[[str], None],
    driver_offsets: int | None,
) -> VerifyReport:
    source_cfg, target_cfg = settings.cluster(clusters[0]), settings.cluster(clusters[1])
    with ClusterAdmin(source_cfg) as s, ClusterAdmin(target_cfg) as t:
        sides = Sides(source_cfg, target_cfg, s, t)
        return verify(
            lambda: build_context(settings.spark, "kmigrate-verify"),
            sides,
            lambda: plan(sides),
            mode="position" if link is None else "link",
            link=link,
            progress=progress,
            driver_offsets=driver_offsets,
        )
