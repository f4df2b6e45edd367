"""``call --output PATH``: the result's binary content, base64-decoded, saved to a file.

What is saved: a tool's or a prompt message's ``image`` and ``audio`` blocks (``data``),
embedded resources with a ``blob``, and a resource read's contents with a ``blob``. Text
is never saved (it is printed; redirect it). PATH is a file when it is not a directory
(then the result must hold exactly one such item), else a directory, one file per item.

A server is hostile: no part of a file's name is its text unsanitised. A name is the
item's number, then the resource URI's last segment (or the block's type) reduced to
``[A-Za-z0-9._-]`` without leading dots, cut, then an extension from the mimeType when
it is a known one; it is opened relative to the directory, never following a symlink.
Everything is decoded and checked (base64, sizes) before the first byte is written, and
the decoded total is bounded by :data:`MAX_SAVE_BYTES` and the number of files by
:data:`MAX_SAVE_FILES` (empty items cost no bytes, and a message can hold many).
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
import re
from dataclasses import dataclass
from typing import Any, Final

from .jsonvalue import plain

__all__ = ["MAX_SAVE_BYTES", "MAX_SAVE_FILES", "SaveError", "save"]

MAX_SAVE_BYTES: Final = 64 * 1024 * 1024
MAX_SAVE_FILES: Final = 1000
_STEM_LIMIT: Final = 64
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")
_EXTENSION: Final = re.compile(r"\.[A-Za-z0-9]{1,10}")
# Common types the platform's table may lack or spell oddly.
_EXTENSIONS: Final = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "image/svg+xml": ".svg",
    "audio/wav": ".wav",
    "audio/x-wav": ".wav",
    "audio/mpeg": ".mp3",
    "audio/ogg": ".ogg",
    "application/pdf": ".pdf",
    "application/zip": ".zip",
    "application/octet-stream": ".bin",
}


class SaveError(Exception):
    """The content cannot be saved. ``reason``: ``invalid-base64``, ``too-large``,
    ``too-many``, ``not-one-item`` (a file PATH and not exactly one item) or ``write-failed``."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Item:
    where: str  # the item's place in the result, e.g. content[2]
    data: str  # base64
    mime: str | None
    stem: str  # the sanitised name without extension


def save(result: Any, method: str, path: str) -> list[dict[str, Any]]:
    """Save ``result``'s binary content (module docstring) under ``path``; what was
    written: ``[{"path", "bytes", "mimeType", "from"}, ...]``.

    Raises :class:`SaveError`; nothing is written when the content is refused."""
    items = _items(plain(result), method)
    into_directory = os.path.isdir(path) or path.endswith(("/", os.sep))
    if not into_directory and len(items) != 1:
        raise SaveError(
            f"--output {path} is a file, and the result has {len(items)} image, audio or "
            "blob items (exactly one is saved to a file; give a directory for several; "
            "text is not saved)",
            "not-one-item",
        )
    if len(items) > MAX_SAVE_FILES:
        raise SaveError(
            f"the result has {len(items)} image, audio or blob items: more than the "
            f"{MAX_SAVE_FILES} files --output writes",
            "too-many",
        )
    decoded = _decode_all(items)
    saved: list[dict[str, Any]] = []
    try:
        if into_directory:
            os.makedirs(path, exist_ok=True)
            directory = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
            try:
                for number, (item, data) in enumerate(zip(items, decoded, strict=True), 1):
                    name = f"{number}-{item.stem}{_extension(item)}"
                    _write_in(directory, name, data)
                    saved.append(_entry(os.path.join(path, name), item, data))
            finally:
                os.close(directory)
        else:
            with open(path, "wb") as file:
                file.write(decoded[0])
            saved.append(_entry(path, items[0], decoded[0]))
    except OSError as exc:
        written = f" ({len(saved)} written before)" if saved else ""
        raise SaveError(
            f"cannot write under --output {path}: {exc.strerror or type(exc).__name__}{written}",
            "write-failed",
        ) from None
    return saved


def _entry(path: str, item: _Item, data: bytes) -> dict[str, Any]:
    return {"path": path, "bytes": len(data), "mimeType": item.mime, "from": item.where}


def _write_in(directory: int, name: str, data: bytes) -> None:
    # Relative to the directory opened once, and never through a symlink: a name that
    # already is one (planted there) fails rather than writing elsewhere.
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(name, flags, 0o644, dir_fd=directory)
    with os.fdopen(fd, "wb") as file:
        file.write(data)


def _decode_all(items: list[_Item]) -> list[bytes]:
    # The bound first, from the text's length: a huge blob is never decoded.
    estimate = sum(len(item.data) // 4 * 3 for item in items)
    if estimate > MAX_SAVE_BYTES:
        raise SaveError(
            f"the content is about {estimate} bytes decoded, more than the "
            f"{MAX_SAVE_BYTES} --output saves",
            "too-large",
        )
    decoded = []
    for item in items:
        try:
            decoded.append(base64.b64decode(item.data, validate=True))
        except (binascii.Error, ValueError):
            raise SaveError(
                f"{item.where} is not valid base64: nothing saved", "invalid-base64"
            ) from None
    return decoded


def _items(result: Any, method: str) -> list[_Item]:
    if not isinstance(result, dict):
        return []
    found: list[_Item] = []
    if method == "resources/read":
        for index, content in enumerate(_list(result.get("contents"))):
            _resource(found, f"contents[{index}]", content)
    elif method == "prompts/get":
        for index, message in enumerate(_list(result.get("messages"))):
            if isinstance(message, dict):
                _block(found, f"messages[{index}].content", message.get("content"))
    else:
        for index, block in enumerate(_list(result.get("content"))):
            _block(found, f"content[{index}]", block)
    return found


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _block(found: list[_Item], where: str, block: Any) -> None:
    if not isinstance(block, dict):
        return
    kind = block.get("type")
    if kind in ("image", "audio") and isinstance(block.get("data"), str):
        found.append(_Item(where, block["data"], _mime(block), str(kind)))
    elif kind == "resource":
        _resource(found, f"{where}.resource", block.get("resource"))


def _resource(found: list[_Item], where: str, content: Any) -> None:
    if isinstance(content, dict) and isinstance(content.get("blob"), str):
        found.append(_Item(where, content["blob"], _mime(content), _stem(content.get("uri"))))


def _mime(item: dict[str, Any]) -> str | None:
    mime = item.get("mimeType")
    return mime if isinstance(mime, str) else None


def _stem(uri: Any) -> str:
    """The URI's last path segment, made safe: ``[A-Za-z0-9._-]`` only, no leading dot
    or dash (no ``..``, no hidden file, no option), at most 64 characters; ``blob``
    when nothing is left."""
    if not isinstance(uri, str):
        return "blob"
    path = uri.split("#", 1)[0].split("?", 1)[0]
    last = path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    safe = _UNSAFE.sub("_", last).lstrip(".-_")[:_STEM_LIMIT].rstrip(".")
    return safe or "blob"


def _extension(item: _Item) -> str:
    if item.mime is None:
        return "" if "." in item.stem else ".bin"
    mime = item.mime.split(";", 1)[0].strip().lower()
    extension = _EXTENSIONS.get(mime) or mimetypes.guess_extension(mime, strict=False) or ""
    if not _EXTENSION.fullmatch(extension):
        extension = "" if "." in item.stem else ".bin"
    if item.stem.lower().endswith(extension.lower()):
        return ""
    return extension
