"""Verify what a link mirrored: the ranges its offset map says were copied and both
clusters still hold. `kmigrate verify --link` and `kmigrate serve` run it."""

from __future__ import annotations

import re
from collections.abc import Callable

from kmigrate.config import Settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.links import Link
from kmigrate.spark.session import build_context
from kmigrate.store import Store
from kmigrate.verify.job import Sides, plan_link, verify
from kmigrate.verify.report import VerifyReport


def verify_link(
    settings: Settings,
    store: Store,
    link: Link,
    pattern: re.Pattern[str] | None,
    progress: Callable[[str], None],
    driver_offsets: int | None = None,
) -> VerifyReport:
    source_cfg, target_cfg = settings.cluster(link.source), settings.cluster(link.target)
    with ClusterAdmin(source_cfg) as s, ClusterAdmin(target_cfg) as t:
        sides = Sides(source_cfg, target_cfg, s, t)
        return verify(
            lambda: build_context(settings.spark, "kmigrate-verify"),
            sides,
            lambda: plan_link(store, link, pattern, sides),
            mode="link",
            link=link.name,
            progress=progress,
            driver_offsets=driver_offsets,
        )
