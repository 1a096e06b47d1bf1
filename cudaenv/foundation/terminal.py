"""What the CLI writes to stdout and stderr shows text and never drives the terminal.

A directory or file name, a version file's content, a program's name or its output
can hold ESC, BEL and C1 controls: OSC 52 writes the clipboard, CSI moves the
cursor and rewrites the screen, a carriage return hides what came before. The
entry point (cudaenv.__main__.run) puts `SafeStream` on sys.stdout and sys.stderr
before any command runs, so every print, click.echo, error line and traceback
passes through `escape()`: no print path can skip it.

The notation (the same wherever cudaenv shows such a character):
  \\xHH    an ASCII control character (C0 but newline and tab, and DEL), or a
          byte that is not UTF-8 (a path os.fsdecode() turned into a surrogate)
  \\uHHHH  a Unicode control: C1 (U+0080..U+009F), the bidirectional marks,
          embeddings, overrides and isolates, and the line and paragraph separators
Everything else, backslashes included, is written unchanged: ordinary text, and
JSON (whose encoder escapes every control character itself), pass byte for byte.
Output that another program reads back (shell code, systemd units) is written by
cudaenv.foundation.quoting without any of these characters, so it stays exact.

Only cudaenv's own drawing (the progress bar's carriage return and erase-line)
reaches the terminal raw, through `SafeStream.control()`, which takes nothing else.
"""

from __future__ import annotations

import io
import sys
from typing import TextIO

# The characters `escape` rewrites, and the notation of each.
_UNICODE_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x2028, 0x202F), *range(0x2066, 0x206A))
_TABLE: dict[int, str] = {}
for _c in (*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F):
    _TABLE[_c] = f"\\x{_c:02x}"
for _c in (*range(0x80, 0xA0), *_UNICODE_CONTROLS):
    _TABLE[_c] = f"\\u{_c:04x}"
for _c in range(0xDC80, 0xDD00):  # os.fsdecode's stand-ins for bytes that are not UTF-8
    _TABLE[_c] = f"\\x{_c - 0xDC00:02x}"
del _c

UNSAFE = frozenset(chr(c) for c in _TABLE)

# `shown`: the same, and newline and tab too, so a value stays on its message's one line.
_INLINE_TABLE: dict[int, str] = {**_TABLE, 0x09: "\\x09", 0x0A: "\\x0a"}

# cudaenv's own drawing: return to the line's start, and erase the line.
CONTROLS = frozenset({"\r", "\r\x1b[K"})


def escape(text: str) -> str:
    """`text` with every character that could drive a terminal written in the notation above."""
    return text.translate(_TABLE)


def shown(value: object) -> str:
    """A path or other untrusted value as shown inside a one-line message: `escape`, and
    newline and tab written \\x0a and \\x09 too. Error messages name a file with it."""
    return str(value).translate(_INLINE_TABLE)


def unsafe(text: str) -> bool:
    """Whether `escape` would change `text`."""
    return not UNSAFE.isdisjoint(text)


class SafeStream(io.TextIOBase):
    """A text stream that writes `escape(s)` to the stream it wraps.

    It has no `buffer`, so nothing (click included) can reach the bytes beneath it.
    """

    def __init__(self, inner: TextIO):
        super().__init__()
        self._inner = inner

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        self._inner.write(escape(s))
        return len(s)

    def control(self, sequence: str) -> None:
        """Write one of cudaenv's own drawing sequences (CONTROLS) as it is."""
        if sequence not in CONTROLS:
            raise ValueError(f"not a drawing sequence of cudaenv's: {sequence!r}")
        self._inner.write(sequence)

    def flush(self) -> None:
        self._inner.flush()

    def fileno(self) -> int:
        return self._inner.fileno()

    def isatty(self) -> bool:
        return self._inner.isatty()

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        # The wrapped stream is the interpreter's; flush it and leave it open.
        if not self.closed:
            self.flush()
        super().close()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._inner.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self._inner.errors

    @property
    def name(self) -> str:
        return getattr(self._inner, "name", "<stream>")

    @property
    def line_buffering(self) -> bool:
        return getattr(self._inner, "line_buffering", False)


def control(stream: object, sequence: str) -> None:
    """Write cudaenv's own drawing `sequence` to `stream`, past its SafeStream if it has one."""
    if isinstance(stream, SafeStream):
        stream.control(sequence)
    else:
        stream.write(sequence)  # type: ignore[attr-defined]


def guard_streams() -> None:
    """Put a SafeStream on sys.stdout and sys.stderr (once; a missing stream stays missing)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, SafeStream):
            setattr(sys, name, SafeStream(stream))
