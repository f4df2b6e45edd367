"""Variables in a config entry's strings, in the syntax of each client that writes one.

One grammar serves every format (a file does not say which client wrote it, and the
forms do not collide)::

    ${VAR}  ${VAR:-default}     Claude Code: the environment; the default (literal
                                text, up to the first ``}``) when VAR is unset or empty
    ${env:VAR}                  VS Code, Cursor, Windsurf: the environment
    ${input:ID}                 VS Code: an input, asked of a person (:class:`InputSpec`)
    ${file:PATH}                Windsurf: the file's text, without its final line break
    ${workspaceFolder}  ${workspaceFolderBasename}  ${userHome}  ${pathSeparator}  ${/}

A variable that cannot be given a value (unset, no default; an input nobody answered; an
unreadable file; a form not listed) is an :class:`Unresolved`: the entry is kept with a
``problem`` naming the variable, never a value. A bare ``$VAR`` is left as it is, as
every client does. Nothing here writes to a terminal: inputs are answered by a resolver
the caller gives.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ..protocol.redact import log_value

__all__ = [
    "INPUT_ENV_PREFIX",
    "MAX_FILE_VARIABLE_BYTES",
    "Expander",
    "InputResolver",
    "InputSpec",
    "Unresolved",
    "input_env_name",
]

INPUT_ENV_PREFIX: Final = "MCPL_HOST_INPUT_"
MAX_FILE_VARIABLE_BYTES: Final = 64 * 1024
_VARIABLE: Final = re.compile(r"\$\{([^{}]*)\}")
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DEFAULTED: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):-(.*)", re.DOTALL)
# A form is quoted in a message only when it looks like one, not like pasted text.
_SHOWN_FORM: Final = re.compile(r"[A-Za-z_/][A-Za-z0-9_.:/-]{0,60}")


class Unresolved(Exception):
    """A variable that has no value; ``message`` names it (never a value)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# Variables that name places on this machine, not credentials: what they give is not
# masked (``${HOME}/projects`` in args would turn every path a server returns into
# ``***/projects/...``), as ``${userHome}`` and ``${workspaceFolder}`` are not.
_LOCATIONS: Final = frozenset(
    {
        "HOME",
        "USERPROFILE",
        "PWD",
        "TMPDIR",
        "TMP",
        "TEMP",
        "APPDATA",
        "LOCALAPPDATA",
        "PROGRAMDATA",
        "USER",
        "USERNAME",
        "LOGNAME",
        "SHELL",
        "PATH",
    }
)


@dataclass(frozen=True, slots=True)
class InputSpec:
    """A VS Code input (``inputs`` of the file): what a person is asked for ``${input:ID}``.

    ``type`` is ``promptString`` or ``pickString``; ``password`` asks without echo;
    ``options`` are a pickString's choices; ``default`` is taken when the answer is empty
    (and when nobody can be asked). Its value is a secret wherever it is used.
    """

    id: str
    type: str = "promptString"
    description: str | None = None
    password: bool = False
    default: str | None = field(default=None, repr=False)
    options: tuple[str, ...] = ()

    @property
    def env_name(self) -> str:
        """The environment variable that answers this input without a person."""
        return input_env_name(self.id)


InputResolver = Callable[[str, InputSpec], "str | None"]
"""``(server, input) -> value``: asks a person for an input of the server's entry;
returns None when there is nobody to ask, raises
:class:`~mcpl_host.ConfigurationError` to refuse (its message becomes the entry's
``problem``)."""


def input_env_name(input_id: str) -> str:
    """``MCPL_HOST_INPUT_`` and the id upper-cased, each other character as ``_``."""
    return INPUT_ENV_PREFIX + re.sub(r"[^A-Z0-9]", "_", input_id.upper())


@dataclass(slots=True)
class Expander:
    """Expands the strings of one entry; collects the values variables gave that are
    secrets (``secrets``).

    ``input_value(id)`` answers ``${input:ID}`` (raising :class:`Unresolved`);
    ``workspace`` is ``${workspaceFolder}``; ``base`` the directory ``${file:}`` paths
    are relative to.
    """

    environ: Mapping[str, str]
    workspace: str
    home: str
    base: Path
    input_value: Callable[[str], str]
    secrets: list[str] = field(default_factory=list)

    def expand(self, text: str, *, secret: bool) -> str:
        """``text`` with its variables replaced. What the environment, a default, an
        input or a file gave is recorded as a secret when ``secret`` (inputs and files
        always). Raises :class:`Unresolved`."""
        if "${" not in text:
            return text

        def one(match: re.Match[str]) -> str:
            value, kind = self._value(match.group(1))
            if kind == "secret" or (kind == "value" and secret):
                self.secrets.append(value)
            return value

        return _VARIABLE.sub(one, text)

    def _value(self, form: str) -> tuple[str, str]:
        """The value of ``${form}``, and ``"path"`` (never a secret), ``"value"`` (a
        secret in a secret field) or ``"secret"`` (always one)."""
        predefined = {
            "workspaceFolder": self.workspace,
            "workspaceFolderBasename": os.path.basename(self.workspace.rstrip("/\\")),
            "userHome": self.home,
            "pathSeparator": os.sep,
            "/": os.sep,
        }
        if form in predefined:
            return predefined[form], "path"
        kind, colon, rest = form.partition(":")
        if colon and kind == "env" and _ENV_NAME.fullmatch(rest):
            return self._env(rest, None, form)
        if colon and kind == "input" and rest:
            return self.input_value(rest), "secret"
        if colon and kind == "file" and rest:
            return self._file(rest), "secret"
        if _ENV_NAME.fullmatch(form):
            return self._env(form, None, form)
        defaulted = _DEFAULTED.fullmatch(form)
        if defaulted:
            return self._env(defaulted.group(1), defaulted.group(2), form)
        shown = f"${{{form}}}" if _SHOWN_FORM.fullmatch(form) else "a ${...} form"
        raise Unresolved(
            f"variable {shown} is not one mcpl-host expands (${{VAR}}, ${{VAR:-default}}, "
            "${env:VAR}, ${input:ID}, ${file:PATH}, ${workspaceFolder}, ${userHome}, ...)"
        )

    def _env(self, name: str, default: str | None, form: str) -> tuple[str, str]:
        value = self.environ.get(name)
        if default is not None and not value:
            # Written in the file, as any literal text is: not a secret of itself.
            return default, "path"
        if value is None:
            raise Unresolved(f"environment variable {name} is not set (${{{form}}})")
        if name.upper() in _LOCATIONS or name.upper().startswith("XDG_"):
            return value, "path"  # masked, it would hide every path a server returns
        return value, "value"

    def _file(self, path: str) -> str:
        where = Path(os.path.expanduser(path))
        if not where.is_absolute():
            where = self.base / where
        shown = log_value(str(where), 120)
        try:
            with where.open("rb") as file:
                data = file.read(MAX_FILE_VARIABLE_BYTES + 1)
        except OSError as exc:
            raise Unresolved(f"${{file:...}}: cannot read {shown} ({exc.strerror})") from None
        if len(data) > MAX_FILE_VARIABLE_BYTES:
            raise Unresolved(f"${{file:...}}: {shown} is over {MAX_FILE_VARIABLE_BYTES} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise Unresolved(f"${{file:...}}: {shown} is not UTF-8 text") from None
        return text.removesuffix("\n").removesuffix("\r")
