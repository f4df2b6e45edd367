"""``mcpl-host completion bash|zsh|fish``: a completion script made from the command's own
argparse parser, so every subcommand and option added later is completed without a
change here.

The parser is walked once into a table (:func:`commands`): for each command path
(``""``, ``"call"``, ``"auth login"``...) its subcommands, its options (which take a
value, the values' choices, whether the value is a file) and its positional choices.
Each shell's script is that table as ``case``/``switch`` functions plus one fixed
function that finds the command path in the words typed so far, skipping options and
their values; after ``--`` (a stdio server's command line) it completes commands, then
files. zsh gets the bash script through zsh's own ``bashcompinit``.

No dependency: shtab writes static bash and zsh scripts from a parser but no fish one,
and argcomplete runs Python on every Tab press and needs a hook in the program.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from typing import Final

from .parser import SHELLS, parser

__all__ = ["Command", "Option", "commands", "script"]

# What a name in a script may be made of: every name is ours, and anything else is left
# out rather than quoted into shell code.
_NAME: Final = re.compile(r"-{0,2}[A-Za-z0-9][A-Za-z0-9_.-]*")
_FILE_WORDS: Final = ("FILE", "PATH")
_HELP_LIMIT: Final = 80


@dataclass(frozen=True, slots=True)
class Option:
    """One option: its spellings, whether it takes a value, the value's choices, whether
    the value names a file, and its help (one line)."""

    strings: tuple[str, ...]
    takes_value: bool
    choices: tuple[str, ...] = ()
    files: bool = False
    help: str = ""


@dataclass(slots=True)
class Command:
    """A command path's subcommands (name, help), options and positional choices."""

    subcommands: list[tuple[str, str]] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)
    positional: list[str] = field(default_factory=list)


def commands(root: argparse.ArgumentParser | None = None) -> dict[str, Command]:
    """The table of ``root`` (default: mcpl-host's parser), by command path. Raises
    nothing."""
    table: dict[str, Command] = {}
    _walk(root or parser(), "", table)
    return table


def _walk(node: argparse.ArgumentParser, path: str, table: dict[str, Command]) -> None:
    command = table.setdefault(path, Command())
    # argparse has no public way to walk a parser: its actions and subparser choices
    # are read as argparse itself reads them (stable since Python 3.2).
    for action in node._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                if _NAME.fullmatch(name):
                    command.subcommands.append((name, _line(helps.get(name, ""))))
                    _walk(sub, f"{path} {name}".strip(), table)
        elif action.option_strings:
            strings = tuple(s for s in action.option_strings if _NAME.fullmatch(s))
            if strings:
                command.options.append(_option(action, strings))
        elif action.choices is not None:
            command.positional.extend(c for c in map(str, action.choices) if _NAME.fullmatch(c))


def _option(action: argparse.Action, strings: tuple[str, ...]) -> Option:
    # An optional value (--otel [URL]) is completed as a flag: the word after it is as
    # often the command or the TARGET.
    takes_value = action.nargs not in (0, "?")
    choices = tuple(c for c in map(str, action.choices or ()) if _NAME.fullmatch(c))
    metavar = str(action.metavar or action.dest or "").upper()
    files = takes_value and not choices and any(word in metavar for word in _FILE_WORDS)
    return Option(strings, takes_value, choices, files, _line(action.help or ""))


def _line(text: str) -> str:
    text = " ".join(text.replace("%%", "%").split())
    return text if len(text) <= _HELP_LIMIT else text[: _HELP_LIMIT - 1] + "…"


def script(shell: str) -> str:
    """The completion script for ``shell`` (one of :data:`~.args.SHELLS`). Raises
    ``ValueError`` for another shell."""
    table = commands()
    if shell == "bash":
        return _bash(table)
    if shell == "zsh":
        return (
            "# mcpl-host completion for zsh (through zsh's bashcompinit), made by "
            "`mcpl-host completion zsh`: source it from ~/.zshrc after compinit.\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + _bash(table, header=False)
        )
    if shell == "fish":
        return _fish(table)
    raise ValueError(f"no completion for {shell!r}: one of {', '.join(SHELLS)}")


def _key(path: str, option: str) -> str:
    return f"{path} {option}"


def _bash(table: dict[str, Command], *, header: bool = True) -> str:
    def case(name: str, arms: list[tuple[list[str], str]], default: str = "") -> str:
        lines = [f"{name}() {{", '    case "$1" in']
        for keys, body in arms:
            patterns = "|".join(f'"{key}"' for key in keys)
            lines.append(f"        {patterns}) {body} ;;")
        lines += ["    esac", f"    {default}".rstrip(), "}"]
        return "\n".join(line for line in lines if line.strip()) + "\n"

    subcommands = [
        ([path], "echo " + " ".join(n for n, _ in c.subcommands))
        for path, c in table.items()
        if c.subcommands
    ]
    options = [
        ([path], "echo " + " ".join(s for o in c.options for s in o.strings))
        for path, c in table.items()
        if c.options
    ]
    positional = [
        ([path], "echo " + " ".join(c.positional)) for path, c in table.items() if c.positional
    ]
    valued = [
        _key(path, s)
        for path, c in table.items()
        for o in c.options
        if o.takes_value
        for s in o.strings
    ]
    files = [
        _key(path, s) for path, c in table.items() for o in c.options if o.files for s in o.strings
    ]
    choices = [
        ([_key(path, s) for s in o.strings], "echo " + " ".join(o.choices))
        for path, c in table.items()
        for o in c.options
        if o.choices
    ]
    parts = [
        "# mcpl-host completion for bash, made by `mcpl-host completion bash`.\n" if header else "",
        case("_mcpl_host_subcommands", subcommands),
        case("_mcpl_host_options", options),
        case("_mcpl_host_positionals", positional),
        case("_mcpl_host_values", choices),
        case("_mcpl_host_takes_value", [(valued, "return 0")] if valued else [], "return 1"),
        case("_mcpl_host_files", [(files, "return 0")] if files else [], "return 1"),
        _BASH_MAIN,
    ]
    return "".join(parts)


# The words before the cursor give the command path: a word that is a subcommand of the
# path so far extends it; an option is skipped with its value when it takes one.
_BASH_MAIN: Final = r"""_mcpl_host() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="" path="" word sub i skip=""
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${COMP_WORDS[i]}"
        if [[ -n $skip ]]; then
            skip=""
            continue
        fi
        if [[ $word == -- ]]; then
            # A stdio server's command line: a program, then its arguments.
            if ((i == COMP_CWORD - 1)); then
                COMPREPLY=($(compgen -c -- "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return 0
        fi
        if [[ $word == -* ]]; then
            if [[ $word != *=* ]] && _mcpl_host_takes_value "$path $word"; then
                skip=1
                prev="$word"
            fi
            continue
        fi
        for sub in $(_mcpl_host_subcommands "$path"); do
            if [[ $word == "$sub" ]]; then
                path="${path:+$path }$sub"
                break
            fi
        done
    done
    if [[ -n $skip ]]; then
        # The word under the cursor is the value of option $prev.
        local values
        values="$(_mcpl_host_values "$path $prev")"
        if [[ -n $values ]]; then
            COMPREPLY=($(compgen -W "$values" -- "$cur"))
        elif _mcpl_host_files "$path $prev"; then
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return 0
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_mcpl_host_options "$path")" -- "$cur"))
    else
        local words
        words="$(_mcpl_host_subcommands "$path") $(_mcpl_host_positionals "$path")"
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    fi
    return 0
}
complete -o default -F _mcpl_host mcpl-host
"""


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish(table: dict[str, Command]) -> str:
    def switch(name: str, arms: list[tuple[list[str], str]], default: str = "") -> str:
        lines = [f"function {name}", '    switch "$argv[1]"']
        for keys, body in arms:
            lines += [
                f"        case {' '.join(_fish_quote(k) for k in keys)}",
                f"            {body}",
            ]
        lines += ["    end", f"    {default}".rstrip(), "end"]
        return "\n".join(line for line in lines if line.strip()) + "\n"

    subcommands = [
        ([path], "printf '%s\\n' " + " ".join(n for n, _ in c.subcommands))
        for path, c in table.items()
        if c.subcommands
    ]
    valued = [
        _key(path, s)
        for path, c in table.items()
        for o in c.options
        if o.takes_value
        for s in o.strings
    ]
    lines = [
        "# mcpl-host completion for fish, made by `mcpl-host completion fish`.",
        "complete -c mcpl-host -e",
        switch("__mcpl_host_subcommands", subcommands).rstrip(),
        switch(
            "__mcpl_host_takes_value", [(valued, "return 0")] if valued else [], "return 1"
        ).rstrip(),
        _FISH_MAIN.rstrip(),
    ]
    for path, command in table.items():
        at = _fish_quote(f"__mcpl_host_at {_fish_quote(path)}")
        for name, help_ in command.subcommands:
            lines.append(f"complete -c mcpl-host -f -n {at} -a {name} -d {_fish_quote(help_)}")
        if command.positional:
            words = _fish_quote(" ".join(command.positional))
            lines.append(f"complete -c mcpl-host -f -n {at} -a {words}")
        for option in command.options:
            spelled = []
            for string in option.strings:
                if string.startswith("--"):
                    spelled.append(f"-l {string[2:]}")
                elif len(string) == 2:
                    spelled.append(f"-s {string[1]}")
                else:
                    spelled.append(f"-o {string[1:]}")
            value = ""
            if option.choices:
                value = f" -x -a {_fish_quote(' '.join(option.choices))}"
            elif option.files:
                value = " -r -F"
            elif option.takes_value:
                value = " -x"
            lines.append(
                f"complete -c mcpl-host -n {at} {' '.join(spelled)}{value} "
                f"-d {_fish_quote(option.help)}"
            )
    return "\n".join(lines) + "\n"


_FISH_MAIN: Final = r"""function __mcpl_host_path
    set -l words (commandline -opc)
    set -e words[1]
    set -l path ''
    set -l skip 0
    for word in $words
        if test $skip = 1
            set skip 0
            continue
        end
        if test "$word" = '--'
            echo ' --'
            return
        end
        if string match -q -- '-*' "$word"
            if not string match -q -- '*=*' "$word"; and __mcpl_host_takes_value "$path $word"
                set skip 1
            end
            continue
        end
        for sub in (__mcpl_host_subcommands "$path")
            if test "$word" = "$sub"
                set path (string trim -- "$path $sub")
                break
            end
        end
    end
    echo "$path"
end
function __mcpl_host_at
    test (__mcpl_host_path) = "$argv[1]"
end
"""
