"""A project whose .cuda-version is exactly at the size bound, for the shell benchmarks.

    python bench/bound_file.py DIR

writes DIR/.cuda-version, MAX_BYTES bytes in MAX_LINES lines (cudaenv/selecting/selection.py)
with the value `12.8` on the last line, so every reader reads and checks all of
it (the worst case within the bound), and makes DIR/a/b/c/d/e, five levels below.
"""

import sys
from pathlib import Path

from cudaenv.selecting.versionfile import MAX_BYTES, MAX_LINES


def bound_text() -> bytes:
    line = MAX_BYTES // MAX_LINES  # bytes per line, newline included
    comments = (b"#" + b"x" * (line - 2) + b"\n") * (MAX_LINES - 1)
    last = b"12.8 #"
    last += b"x" * (MAX_BYTES - len(comments) - len(last) - 1) + b"\n"
    text = comments + last
    assert len(text) == MAX_BYTES and text.count(b"\n") == MAX_LINES
    return text


if __name__ == "__main__":
    d = Path(sys.argv[1])
    (d / "a/b/c/d/e").mkdir(parents=True, exist_ok=True)
    (d / ".cuda-version").write_bytes(bound_text())
