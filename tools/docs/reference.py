"""mkdocs hook: the reference pages' generated parts, from the code at build time.

A page under docs/reference/ holds a marker line such as ``<!-- reference: cli -->``;
the build replaces it with what the code says now (the click commands, the
configuration model's schema, the OpenAPI document, the metrics registry, the exit-code
table), so the reference cannot drift from the code. An unknown marker fails the build.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

# mkdocs loads a hook by its path; the generators are imported as the tests import them.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.docs import (
    api_reference,
    cli_reference,
    config_reference,
    exit_codes,
    metrics_reference,
)

MARKER = re.compile(r"^<!-- reference: ([a-z-]+) -->$", re.MULTILINE)


def cli_page() -> str:
    """Every visible command of `kmigrate`, with its options."""
    from kmigrate.cli.main import cli

    return cli_reference.render(cli)


def configuration_page() -> str:
    """Every key of the configuration file, from its model's schema."""
    import kmigrate.config

    schema = config_reference.file_schema(kmigrate.config.Settings)
    return config_reference.render(schema, config_reference.example_of(kmigrate.config.__doc__))


def api_page() -> str:
    """Every path and method of the REST API, its bodies."""
    return api_reference.render(api_reference.openapi_document())


def refusals_page() -> str:
    """The HTTP status of each kind of refusal."""
    return api_reference.render_refusals(api_reference.refusal_statuses())


def metrics_page() -> str:
    """Every metric family `kmigrate serve` exposes."""
    return metrics_reference.render(metrics_reference.families(metrics_reference.served_registry()))


def exit_codes_page() -> str:
    """The exit-code table `kmigrate --help` prints, and the error kinds by exit code."""
    from kmigrate.cli.main import EXIT_CODES

    return exit_codes.render(EXIT_CODES, exit_codes.error_classes())


GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_page,
    "configuration": configuration_page,
    "api": api_page,
    "api-refusals": refusals_page,
    "metrics": metrics_page,
    "exit-codes": exit_codes_page,
}


def expand(markdown: str, where: str) -> str:
    """``markdown`` with every marker replaced by its generated text; an unknown marker
    is an error that names the page."""

    def generated(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            known = ", ".join(sorted(GENERATORS))
            raise PluginError(f"{where}: unknown reference marker '{name}' (known: {known})")
        return GENERATORS[name]().rstrip("\n")

    return MARKER.sub(generated, markdown)


def on_page_markdown(markdown: str, page: Any, **_kwargs: Any) -> str:
    """mkdocs event: a page's Markdown before it is rendered."""
    return expand(markdown, page.file.src_uri)
