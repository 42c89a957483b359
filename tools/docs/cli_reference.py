"""The command-line reference, from kmigrate's click command tree: one section per
command (groups and their sub-commands alike), with its usage line, its help and a table
of its options as `--help` shows them. Hidden commands and options (old spellings kept
for one release) are left out, as `--help` leaves them out."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass

import click

from tools.docs.markdown import cell, code, heading, prose, table

PROGRAM = "kmigrate"


@dataclass(frozen=True)
class Entry:
    """One command of the tree, with the context click would give it on a command line."""

    path: tuple[str, ...]  # ("topics", "list"); () for `kmigrate` itself
    ctx: click.Context

    @property
    def command(self) -> click.Command:
        return self.ctx.command

    @property
    def anchor(self) -> str:
        """The section's anchor: the words after `kmigrate`, joined by dashes."""
        return "-".join(self.path) or PROGRAM


def walk(root: click.Command) -> Iterator[Entry]:
    """Every visible command under ``root`` (``root`` first), parents before their
    sub-commands, sub-commands in name order; a lazily loaded group is loaded."""
    yield from _walk(click.Context(root, info_name=PROGRAM), ())


def _walk(ctx: click.Context, path: tuple[str, ...]) -> Iterator[Entry]:
    yield Entry(path, ctx)
    for name, sub in subcommands(ctx):
        yield from _walk(click.Context(sub, info_name=name, parent=ctx), (*path, name))


def subcommands(ctx: click.Context) -> list[tuple[str, click.Command]]:
    """The visible sub-commands of ``ctx``'s command (none for a plain command)."""
    group = ctx.command
    if not isinstance(group, click.Group):
        return []
    found = [(name, group.get_command(ctx, name)) for name in sorted(group.list_commands(ctx))]
    return [(name, sub) for name, sub in found if sub is not None and not sub.hidden]


def options(entry: Entry) -> list[tuple[str, str]]:
    """The command's options as `--help` lists them: (names with metavar, help with its
    default and whether it is required); hidden options and `--help` left out."""
    ctx = entry.ctx
    rows = []
    for param in entry.command.get_params(ctx):
        if param is entry.command.get_help_option(ctx):
            continue
        record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
        if record is not None:
            rows.append(record)
    return rows


def usage(entry: Entry) -> str:
    """The usage line `--help` prints (arguments kept for old spellings are not in it)."""
    pieces = entry.command.collect_usage_pieces(entry.ctx)
    return " ".join([entry.ctx.command_path, *pieces])


def render(root: click.Command) -> str:
    """The whole reference: a section per visible command, `kmigrate` itself first."""
    return "\n\n".join(render_entry(entry) for entry in walk(root)) + "\n"


def render_entry(entry: Entry) -> str:
    """One command's section: heading (`kmigrate` and its commands at level 2, their
    sub-commands one deeper), usage, help, sub-commands, options."""
    parts = [
        heading(min(1 + max(len(entry.path), 1), 6), code(entry.ctx.command_path), entry.anchor),
        f"```text\n{usage(entry)}\n```",
    ]
    if entry.command.deprecated:
        parts.append("!!! warning\n    Deprecated: kept for one release.")
    parts.append(prose(entry.command.help))
    parts += _subcommand_table(entry)
    rows = [[cell(code(names)), cell(text)] for names, text in options(entry)]
    if rows:
        parts.append(table(["Option", "Description"], rows))
    return "\n\n".join(part for part in parts if part)


def summary(command: click.Command) -> str:
    """What a command does, as raw text: its short help, else its help's first paragraph."""
    text = command.short_help or inspect.cleandoc(command.help or "")
    return text.split("\f", 1)[0].split("\n\n", 1)[0].removeprefix("\b")


def _subcommand_table(entry: Entry) -> list[str]:
    subs = subcommands(entry.ctx)
    if not subs:
        return []
    rows = [
        [f"[{code(name)}](#{'-'.join((*entry.path, name))})", cell(summary(sub))]
        for name, sub in subs
    ]
    return [table(["Command", "What it does"], rows)]
