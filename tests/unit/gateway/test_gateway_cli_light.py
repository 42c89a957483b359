"""`kmigrate gateway ... --help` (and a refused gateway command line) never imports the
gateway's protocol library (kio): the control code is imported inside the commands."""

from __future__ import annotations

import subprocess
import sys


def test_the_gateway_commands_import_no_protocol_library() -> None:
    code = (
        "import sys; import kmigrate.cli.gateway, kmigrate.cli.gateway_moves; "
        "print(sorted(m for m in sys.modules if m == 'kio' or m.startswith('kio.')))"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert found == "[]", found
