"""The generated reference pages cover the code: every command (group or leaf) of the
click tree has a section listing its visible options, every key of the configuration
file a row, every API path and method a section, every metric and exit code a row.
Each check walks the code on its own (not through the generator) and looks for what it
found in the generated Markdown, so a generator that drops something fails here."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from fastapi.routing import APIRoute
from hypothesis import given
from hypothesis import strategies as st
from mkdocs.exceptions import PluginError
from prometheus_client import generate_latest
from pydantic import BaseModel, SecretStr
from tools.docs import (
    api_reference,
    cli_reference,
    config_reference,
    exit_codes,
    metrics_reference,
    reference,
)
from tools.docs.markdown import cell, code

import kmigrate.config
from kmigrate.cli.main import EXIT_CODES, cli
from kmigrate.config import Settings, StoreConfig
from kmigrate.serve.app import create_app

ROOT = Path(__file__).resolve().parents[3]


def sections(markdown: str) -> dict[str, str]:
    """The generated Markdown split at headings, by their explicit anchors."""
    found: dict[str, str] = {}
    anchor = ""
    for line in markdown.splitlines():
        heading = re.match(r"^#+ .* \{#([^}]+)\}$", line)
        anchor = heading.group(1) if heading else anchor
        found[anchor] = found.get(anchor, "") + line + "\n"
    return found


def first_column(section: str) -> list[str]:
    """The first cell of every table row of a section (header and rule left out)."""
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [row[2:].split(" | ", 1)[0] for row in rows[1:] if not row.startswith("|---")]


# ---------------------------------------------------------------- the command line


def click_tree(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple]:
    """(path, command, context) of every visible command, walked here with click only."""
    ctx = click.Context(command, info_name=path[-1] if path else "kmigrate")
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from click_tree(sub, (*path, name))


COMMANDS = list(click_tree(cli))


@pytest.fixture(scope="module")
def cli_sections() -> dict[str, str]:
    return sections(cli_reference.render(cli))


@pytest.mark.parametrize(
    ("path", "command", "ctx"), COMMANDS, ids=[" ".join(p) or "kmigrate" for p, _, _ in COMMANDS]
)
def test_every_command_has_a_section_with_its_visible_options(
    cli_sections: dict[str, str], path: tuple[str, ...], command: click.Command, ctx: click.Context
) -> None:
    anchor = "-".join(path) or "kmigrate"
    assert anchor in cli_sections, f"`kmigrate {' '.join(path)}` has no section"
    section = cli_sections[anchor]
    assert " ".join(["kmigrate", *path]) in section.splitlines()[0]
    listed = " ".join(first_column(section))
    for param in command.params:
        if isinstance(param, click.Option):
            for name in param.opts + param.secondary_opts:
                if param.hidden:
                    assert name not in listed.split(), f"hidden {name} is listed"
                else:
                    assert name in listed, f"{name} of `kmigrate {' '.join(path)}` is missing"


@pytest.mark.parametrize(
    ("path", "command", "ctx"), COMMANDS, ids=[" ".join(p) or "kmigrate" for p, _, _ in COMMANDS]
)
def test_every_visible_option_says_what_it_does(
    path: tuple[str, ...], command: click.Command, ctx: click.Context
) -> None:
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert param.help, f"{param.opts[0]} of `kmigrate {' '.join(path)}` has no help"


def test_a_hidden_command_or_option_is_left_out_and_a_new_one_is_in() -> None:
    @click.group()
    def root() -> None:
        """The root."""

    @root.group()
    def things() -> None:
        """Things."""

    @things.command("make")
    @click.option("--name", help="The name.")
    @click.option("--old", hidden=True, help="Old spelling.")
    def make(name: str, old: str) -> None:
        """Make a thing."""

    @things.command("secret", hidden=True)
    def secret() -> None:
        """Not for users."""

    found = sections(cli_reference.render(root))
    assert {"kmigrate", "things", "things-make"} <= set(found)
    assert "things-secret" not in found
    assert "--name" in found["things-make"] and "--old" not in found["things-make"]
    assert "[`make`](#things-make)" in found["things"]


# ---------------------------------------------------------------- the configuration file


def model_keys(model: type[BaseModel], path: str) -> Iterator[tuple[str, str, bool]]:
    """(section path, key, whether it has a description) of every field a user writes,
    walked here from the models' fields."""
    for key, field in model.model_fields.items():
        if field.exclude:
            continue
        yield path, key, bool(field.description)
        where = key if path == config_reference.TOP else f"{path}.{key}"
        for nested, suffix in nested_models(field.annotation):
            yield from model_keys(nested, where + suffix)


def nested_models(annotation: object, suffix: str = "") -> Iterator[tuple[type[BaseModel], str]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, suffix
        return
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is dict:
        yield from nested_models(args[1], suffix + ".<name>")
    elif origin is list:
        yield from nested_models(args[0], suffix + "[]")
    elif origin in (typing.Union, types.UnionType):
        for arg in args:
            yield from nested_models(arg, suffix)


CONFIG_KEYS = list(model_keys(Settings, config_reference.TOP))


@pytest.fixture(scope="module")
def config_rows() -> dict[str, list[str]]:
    schema = config_reference.file_schema(Settings)
    found = config_reference.sections(schema)
    page = sections(config_reference.render(schema))
    return {s.path: first_column(page[s.anchor]) for s in found}


@pytest.mark.parametrize(
    ("path", "key", "described"), CONFIG_KEYS, ids=[f"{p}: {k}" for p, k, _ in CONFIG_KEYS]
)
def test_every_configuration_key_has_a_described_row(
    config_rows: dict[str, list[str]], path: str, key: str, described: bool
) -> None:
    assert path in config_rows, f"no section for {path}"
    assert code(key) in config_rows[path], f"{path}: {key} has no row"
    assert described, f"{path}: {key} has no description (a docstring under the field)"


def test_keys_kmigrate_sets_itself_are_not_in_the_reference() -> None:
    page = sections(config_reference.render(config_reference.file_schema(Settings)))
    rows = first_column(page["top-level"])
    assert code("path") not in rows and code("env_file") in rows


def test_the_example_is_the_configuration_module_s_own() -> None:
    example = config_reference.example_of(kmigrate.config.__doc__)
    assert example is not None and example.startswith("env_file:")
    assert "bootstrap_servers:" in example


# ---------------------------------------------------------------- the REST API


def api_routes(routes: list[Any]) -> Iterator[APIRoute]:
    """The app's API routes, walked here into included routers (FastAPI keeps those as
    an entry holding the router, whose routes carry their full paths)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        elif hasattr(route, "original_router"):
            yield from api_routes(route.original_router.routes)


@pytest.fixture(scope="module")
def app_routes() -> tuple[list[tuple[str, str]], str]:
    app = create_app(Settings(store=StoreConfig(url=SecretStr("sqlite://"))))
    try:
        routes = [
            (method, route.path)
            for route in api_routes(app.routes)
            if route.include_in_schema
            for method in sorted(route.methods)
        ]
        return routes, api_reference.render(app.openapi())
    finally:
        app.state.served.sampler.close()


def test_every_api_path_and_method_has_a_section(
    app_routes: tuple[list[tuple[str, str]], str],
) -> None:
    routes, page = app_routes
    found = sections(page)
    assert len(routes) >= 15
    for method, path in routes:
        anchor = api_reference.anchor(method, path)
        assert anchor in found, f"{method} {path} has no section"
        assert f"`{method} {path}`" in found[anchor].splitlines()[0]


def test_every_api_path_says_what_it_does(app_routes: tuple[list[tuple[str, str]], str]) -> None:
    _, page = app_routes
    for anchor, text in sections(page).items():
        if anchor.startswith(("get-", "post-")):
            assert text.split("\n\n")[1].strip()[:1] not in ("|", ""), f"{anchor}: no description"


def test_request_bodies_list_their_fields(app_routes: tuple[list[tuple[str, str]], str]) -> None:
    found = sections(app_routes[1])
    assert "[`StepRequest`](#steprequest)" in found["post-api-migrations-name-steps-step"]
    assert {code("yes"), code("dry_run"), code("topics")} <= set(first_column(found["steprequest"]))
    assert "httpvalidationerror" not in found
    for anchor in ("groupmove", "newmigration", "steprequest", "verifyrun"):
        said = found[anchor].split("\n\n")[1]
        assert not said.startswith("|"), f"the body {anchor} says nothing about itself"


def test_every_error_kind_has_a_refusal_status() -> None:
    kinds = [kind for _, kinds in api_reference.refusal_statuses() for kind in kinds]
    assert sorted(kinds) == sorted(e.code for e in exit_codes.error_classes())
    assert dict(api_reference.refusal_statuses())[404][0] == "not-found"


# ---------------------------------------------------------------- metrics and exit codes


def test_every_metric_a_scrape_names_is_listed() -> None:
    registry = metrics_reference.served_registry()
    scraped = re.findall(r"^# TYPE (\S+) (\S+)$", generate_latest(registry).decode(), re.M)
    listed = {f.name: f for f in metrics_reference.families(registry)}
    page = metrics_reference.render(list(listed.values()))
    assert len(scraped) >= 10
    for name, kind in scraped:  # a counter's family is NAME_total in the text format
        assert name in listed and code(name) in page, f"{name} is not listed"
        assert listed[name].type == kind and listed[name].help
    assert listed["kmigrate_mirror_lag_records"].labels == ("link", "topic", "partition")
    assert listed["kmigrate_api_refusals_total"].labels == ("kind",)


def test_every_exit_code_of_the_help_and_every_error_kind_is_listed() -> None:
    page = exit_codes.render(EXIT_CODES, exit_codes.error_classes())
    table = {row.split(" | ")[0] for row in page.splitlines() if row.startswith("| `")}
    codes = [int(m) for m in re.findall(r"^\s+(\d+)\s", EXIT_CODES, re.M)]
    assert codes[:3] == [0, 1, 2] and 9 in codes and 130 in codes
    assert {f"| `{n}`" for n in codes} <= table
    for error in exit_codes.error_classes():
        assert f"| `{error.exit_code}` | `{error.code}` | " in page
        assert error.__dict__.get("__doc__"), f"{error.__name__} says nothing about itself"


# ---------------------------------------------------------------- the hook


def test_each_reference_page_holds_its_marker() -> None:
    for page, marker in [
        ("cli", "cli"),
        ("configuration", "configuration"),
        ("api", "api"),
        ("metrics", "metrics"),
        ("exit-codes", "exit-codes"),
    ]:
        text = (ROOT / "docs" / "reference" / f"{page}.md").read_text()
        assert f"<!-- reference: {marker} -->" in text.splitlines(), page


def test_the_hook_replaces_markers_and_refuses_unknown_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(reference.GENERATORS, "cli", lambda: "GENERATED\n")
    assert reference.expand("# T\n\n<!-- reference: cli -->\n\nend", "p.md") == (
        "# T\n\nGENERATED\n\nend"
    )
    with pytest.raises(PluginError, match=r"p\.md: unknown reference marker 'nope'"):
        reference.expand("<!-- reference: nope -->", "p.md")


# ---------------------------------------------------------------- Markdown


@given(st.text())
def test_a_cell_stays_one_cell(text: str) -> None:
    shown = cell(text)
    assert "\n" not in shown and "\r" not in shown
    outside_code = re.sub(r"(`+).+?\1", "", shown)
    assert re.search(r"(?<!\\)\|", outside_code) is None


def test_pipes_inside_code_are_kept_and_backticks_fenced() -> None:
    assert cell("`[a|b]` or c|d") == "`[a|b]` or c\\|d"
    assert code("a`b") == "``a`b``"
