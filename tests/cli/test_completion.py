"""``mcpl-host completion bash|zsh|fish``: each script, printed by the real command, is
loaded into the real shell and asked for completions as the shell asks for them."""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

import pytest

from mcpl_host.cli.completion import commands

from .helpers import run

SHELL_TIMEOUT = 30

# (words typed, the word under the cursor last) -> what must be offered (and what not).
CASES = [
    (["mcpl-host", ""], {"connect", "call", "auth", "completion"}, set()),
    (["mcpl-host", "c"], {"connect", "call", "completion"}, {"auth"}),
    (["mcpl-host", "call", "--o"], {"--output"}, {"--all"}),
    (["mcpl-host", "call", "--ar"], {"--args", "--arg"}, set()),
    # An option's value is skipped: "--timeout 5" does not end the command path.
    (["mcpl-host", "call", "--timeout", "5", "--to"], {"--tool"}, set()),
    (["mcpl-host", "connect", "--a"], {"--all"}, {"--args"}),
    (["mcpl-host", "auth", ""], {"login", "status", "logout"}, {"connect"}),
    (["mcpl-host", "auth", "login", "--no"], {"--no-browser"}, set()),
    (["mcpl-host", "completion", ""], {"bash", "zsh", "fish"}, set()),
]


def _script(shell: str, tmp_path: Path) -> Path:
    done = run("completion", shell)
    assert done.returncode == 0, done.stderr
    path = tmp_path / f"mcpl-host.{shell}"
    path.write_text(done.stdout)
    return path


def _shell(argv: list[str]) -> str:
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=SHELL_TIMEOUT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _quoted(words: list[str]) -> str:
    return " ".join("'" + word.replace("'", "'\\''") + "'" for word in words)


def test_bash_completes_subcommands_and_options(tmp_path: Path) -> None:
    script = _script("bash", tmp_path)
    # The function the script registers, found as bash finds it (complete -p), then
    # called with COMP_WORDS and COMP_CWORD set as bash sets them.
    lines = [
        f"source {script}",
        'read -r -a spec <<< "$(complete -p mcpl-host)"',
        "for ((i = 0; i < ${#spec[@]}; i++)); do [[ ${spec[i]} == -F ]] && fn=${spec[i+1]}; done",
        "ask() {",
        '    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()',
        '    "$fn"; printf "%s\\n" "${COMPREPLY[*]}"',
        "}",
    ]
    lines += [f"ask {_quoted(words)}" for words, _, _ in CASES]
    answers = _shell(["bash", "--norc", "--noprofile", "-c", "\n".join(lines)]).splitlines()
    assert len(answers) == len(CASES)
    for (words, wanted, unwanted), answer in zip(CASES, answers, strict=True):
        offered = set(answer.split())
        assert wanted <= offered, (words, offered)
        assert not unwanted & offered, (words, offered)


def test_bash_completes_files_for_a_file_option_and_commands_after_the_separator(
    tmp_path: Path,
) -> None:
    script = _script("bash", tmp_path)
    (tmp_path / "servers.json").write_text("{}")
    lines = [
        f"source {script}",
        f"cd {tmp_path}",
        "ask() {",
        '    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()',
        '    _mcpl_host; printf "%s\\n" "${COMPREPLY[*]}"',
        "}",
        "ask mcpl-host connect --config serv",
        "ask mcpl-host connect -- bas",
    ]
    config, command = _shell(["bash", "--norc", "--noprofile", "-c", "\n".join(lines)]).splitlines()
    assert config.split() == ["servers.json"]
    assert "bash" in command.split()


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completes_through_bashcompinit(tmp_path: Path) -> None:
    script = _script("zsh", tmp_path)
    # zsh's compgen (bashcompinit's) leaves filtering by the prefix to compadd: the
    # candidates come back whole, and are filtered here as compadd would.
    lines = [
        f"autoload -U compinit && compinit -u -d {tmp_path / 'zcompdump'}",
        f"source {script}",
        "ask() {",
        "    local -a COMP_WORDS; local COMP_CWORD",
        '    COMP_WORDS=("$@"); (( COMP_CWORD = $# - 1 ))',
        '    print -r -- "$(compgen -F _mcpl_host -- "${@[-1]}" | tr "\\n" " ")"',
        "}",
    ]
    lines += [f"ask {_quoted(words)}" for words, _, _ in CASES]
    answers = _shell(["zsh", "-f", "-c", "\n".join(lines)]).splitlines()
    assert len(answers) == len(CASES)
    for (words, wanted, unwanted), answer in zip(CASES, answers, strict=True):
        offered = {word for word in answer.split() if word.startswith(words[-1])}
        assert wanted <= offered, (words, offered)
        assert not unwanted & offered, (words, offered)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completes_subcommands_and_options(tmp_path: Path) -> None:
    script = _script("fish", tmp_path)
    lines = [f"source {script}"]
    for words, _, _ in CASES:
        typed = " ".join(words)
        lines += [f"complete -C {_quoted([typed])} | string join \\x1f"]
    answers = _shell(["fish", "--no-config", "-c", "\n".join(lines)]).splitlines()
    assert len(answers) == len(CASES)
    for (words, wanted, unwanted), answer in zip(CASES, answers, strict=True):
        # Each candidate is "word<TAB>description", joined by US characters here.
        offered = {item.split("\t")[0] for item in answer.split("\x1f")}
        assert wanted <= offered, (words, answer)
        assert not unwanted & offered, (words, answer)


def test_every_subcommand_and_option_of_the_parser_is_in_the_table() -> None:
    # A subcommand added the way `config list` will be (a parser of its own with its
    # options) is found without any change to the generator.
    root = argparse.ArgumentParser(prog="mcpl-host")
    groups = root.add_subparsers(dest="command")
    config = groups.add_parser("config").add_subparsers(dest="action")
    listing = config.add_parser("list", help="the config files of installed clients")
    listing.add_argument("--json", action="store_true")
    listing.add_argument("--client", choices=["claude", "vscode"])
    listing.add_argument("--file", metavar="FILE")
    table = commands(root)
    assert [name for name, _ in table["config"].subcommands] == ["list"]
    options = {o.strings[-1]: o for o in table["config list"].options}
    assert options["--json"].takes_value is False
    assert options["--client"].choices == ("claude", "vscode")
    assert options["--file"].files is True


def test_an_unknown_shell_is_a_usage_error() -> None:
    done = run("completion", "tcsh")
    assert done.returncode == 2
    assert "invalid choice: 'tcsh'" in done.stderr
