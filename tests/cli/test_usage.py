"""Bad usage exits 2: argparse's own errors and the command's rules about targets.

The rules are checked on the parser itself (fast, one table); the exit status and where
the message goes, on the real command.
"""

from __future__ import annotations

import json

import pytest

from mcpl_host import __version__
from mcpl_host.cli.args import UsageError, parse

from .helpers import run


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "required: COMMAND"),
        (["connect"], "no target given"),
        (["connect", "--demo", "tcp://127.0.0.1:9"], "give one target"),
        (["connect", "--config", "x.json", "--server", "a", "--all"], "not both"),
        (["connect", "--all", "--demo"], "go with --config"),
        (["connect", "--timeout", "-1", "--demo"], "positive number"),
        (["connect", "--env", "NOEQUALS", "--demo"], "KEY=VALUE"),
        (["connect", "--"], "followed by the server's command"),
        (["call", "--demo"], "exactly one of --tool"),
        (["config", "list", "--bogus"], "unrecognized arguments: --bogus"),
        (["config"], "required: ACTION"),
        (
            ["call", "--tool", "echo", "--config", "x.json", "--all"],
            "unrecognized arguments: --all",
        ),
        (["call", "--resource", "demo://readme", "--args", "{}", "--demo"], "not --resource"),
        (["call", "--tool", "echo", "--args", "[1]", "--demo"], "must be a JSON object"),
        (["call", "--tool", "echo", "--args", "{", "--demo"], "is not JSON: "),
        (["connect", "--bogus", "--demo"], "unrecognized arguments: --bogus"),
        (["explode"], "invalid choice"),
    ],
)
def test_bad_usage_is_refused_with_a_message(args: list[str], says: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse(args)
    assert says in refused.value.message
    assert refused.value.usage.startswith("usage: mcpl-host")


def test_bad_usage_exits_2_with_the_message_on_stderr() -> None:
    done = run("connect", "--demo", "--bogus")
    assert done.returncode == 2
    assert "usage: mcpl-host connect" in done.stderr
    assert "error: unrecognized arguments: --bogus" in done.stderr
    assert done.stdout == ""


def test_the_stdio_command_line_is_taken_whole() -> None:
    options = parse(
        ["connect", "--json", "--versions", "2025-03-26", "--", "python3", "s.py", "--json", "--"]
    )
    assert options.json
    assert options.versions == ("2025-03-26",)
    assert options.stdio == ("python3", "s.py", "--json", "--")


def test_bad_usage_with_json_is_still_one_object() -> None:
    done = run("connect", "--json", "--timeout", "soon", "--demo")
    assert done.returncode == 2
    report = json.loads(done.stdout)
    assert report["ok"] is False
    assert report["error"]["kind"] == "config-error"
    assert "soon" in report["error"]["message"]


def test_an_unknown_revision_is_a_config_error() -> None:
    done = run("connect", "--json", "--versions", "2099-01-01", "--demo")
    assert done.returncode == 2
    assert "2099-01-01" in json.loads(done.stdout)["error"]["message"]


def test_the_value_of_a_bad_env_entry_is_never_echoed() -> None:
    done = run("connect", "--env", "TOKEN=hunter2-secret", "--bogus", "hunter2-secret", "--demo")
    assert done.returncode == 2
    assert "hunter2-secret" not in done.stderr + done.stdout


def test_version_is_printed_with_exit_0() -> None:
    done = run("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"mcpl-host {__version__}\n", "")
