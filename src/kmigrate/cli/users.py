"""`kmigrate users`: SCRAM users of a cluster; create them on another from a password file.

The copy (and with it the Kafka client) is imported by the commands that use it:
`kmigrate users --help` should not load it."""

from __future__ import annotations

import stat
from pathlib import Path

import click

from kmigrate.cli import render
from kmigrate.cli.context import AppContext, pass_app
from kmigrate.cli.options import cluster_option, json_option
from kmigrate.identity.users import Credential, parse_passwords

EXIT_INCOMPLETE = 1


@click.group("users")
def group() -> None:
    """SCRAM users: list them, create them on another cluster from a password file."""


@group.command("list")
@cluster_option()
@json_option
@pass_app
def list_users(app: AppContext, cluster_name: str, as_json: bool) -> None:
    """Every SCRAM user with its mechanisms and iterations (Kafka never returns a
    password)."""
    from kmigrate.identity.user_copy import read_users

    found = read_users(app.cluster(cluster_name))
    if as_json:
        render.print_json({"cluster": cluster_name, "users": [_json(c) for c in found]})
        return
    if not found:
        render.out.print(f"cluster {cluster_name}: no SCRAM user")
        return
    render.table(None, ["user", "mechanism", "iterations"],
                 [(c.user, c.mechanism, str(c.iterations)) for c in found])  # fmt: skip


@group.command("copy")
@click.option("--source", required=True, metavar="CLUSTER", help="The cluster copied from.")
@click.option("--target", required=True, metavar="CLUSTER", help="The cluster copied to.")
@click.option(
    "--passwords",
    "passwords_path",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="A file of user=password lines (never printed or logged).",
)
@click.option("--replace", is_flag=True, help="Also set users the target already has.")
@click.option("--dry-run", is_flag=True, help="Show what would be created; change nothing.")
@json_option
@pass_app
def copy(
    app: AppContext,
    source: str,
    target: str,
    passwords_path: Path,
    replace: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Create the source's SCRAM users on the target with the same mechanism and
    iterations, each with its password from --passwords.

    Users the target already has with that mechanism are left alone (--replace sets
    them). A user with no password in the file is listed and the command exits 1."""
    from kmigrate.identity.user_copy import copy_users

    passwords, loose = _passwords(passwords_path)
    source_cfg, target_cfg = app.pair(source, target)
    if loose:  # said once the input is known good: an error stays one line
        render.progress(f"warning: {passwords_path} can be read by other users; chmod 600 it")
    copied = copy_users(source_cfg, target_cfg, passwords, replace=replace, dry_run=dry_run)
    plan, failed = copied.plan, copied.missing_after
    verb = "would create" if dry_run else "created"
    if as_json:
        render.print_json(
            {"source": source, "target": target, "dry_run": dry_run,
             "created": [_json(c) for c in plan.create], "exists": [_json(c) for c in plan.exists],
             "no_password": [_json(c) for c in plan.no_password],
             "not_found_after": [_json(c) for c in failed]}
        )  # fmt: skip
    else:
        rows = [(c.user, c.mechanism, str(c.iterations), verb) for c in plan.create]
        rows += [(c.user, c.mechanism, str(c.iterations), "exists on the target (left)")
                 for c in plan.exists]  # fmt: skip
        rows += [(c.user, c.mechanism, str(c.iterations), "no password given: not created")
                 for c in plan.no_password]  # fmt: skip
        if rows:
            render.table(None, ["user", "mechanism", "iterations", ""], rows)
        render.out.print(
            f"users {source} -> {target}: {verb} {len(plan.create)}, "
            f"{len(plan.exists)} already there, {len(plan.no_password)} without a password"
            + (f"; {len(failed)} not found on the target afterwards" if failed else "")
        )
    if plan.no_password or failed:
        raise click.exceptions.Exit(EXIT_INCOMPLETE)


def _passwords(path: Path) -> tuple[dict[str, str], bool]:
    """The password file, checked before any cluster is contacted, and whether users
    other than its owner may read it."""
    from kmigrate.config import read_user_file

    text = read_user_file(path, "--passwords")
    loose = bool(path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO))
    return parse_passwords(text, str(path)), loose


def _json(c: Credential) -> dict[str, object]:
    return {"user": c.user, "mechanism": c.mechanism, "iterations": c.iterations}
