"""The hostile corpus: what anyone who can write a name, a path, a variable or a PATH may hand
cudaenv, in one place, for every test that runs a reader of untrusted input.

Names carry payloads that, run by any shell or program, create a file whose name starts with
MARKER in the current directory (`no_markers` looks for it); terminal escapes are checked on the
raw bytes a process writes (`raw_controls`). Paths, umasks and PATH shapes are built by the
helpers below from real files: symlinks, FIFOs, planted programs.
"""

from __future__ import annotations

import os
from pathlib import Path

MARKER = "PWNED"

# -- names --------------------------------------------------------------------------------------
# Each starts with a unique tag (so a prefix completes it alone) and holds one hostile shape.
SUBSTITUTIONS = [
    "h01$(touch PWNED)", "h02`touch PWNED`", "h03${IFS}$(touch${IFS}PWNED)", "h04;touch PWNED",
    "h05|touch PWNED", "h06&touch PWNED&", "h22*(e:'touch PWNED':)", "h23(touch PWNED)", "h27$PWNED",
]
WORDS = ["h07 two words", "h08\nnewline", "h09'quote", 'h10"dq', "h20\\back", "h21:colon", "h24\ttab",
         "h25#hash", "h26\r", "h16$HOME", "h17!!"]
GLOBS = ["h11*", "h12?", "h13[a-z]", "h14{a,b}", "h15~"]
# OSC 52 writes the clipboard, CSI clears the screen and sets colours, U+009B is the C1 CSI.
OSC52 = "\x1b]52;c;cHduZWQ=\x07"
CSI = "\x1b[2J\x1b[31m"
C1 = "\u009b1m"
TERMINAL = ["h18" + OSC52, "h19" + CSI, "h28" + C1, "h29\x07bel"]
# Names that start with what a shell or a program's option parser acts on.
LEADING = ["-rf", "--help=x", "$(touch PWNED)", "`touch PWNED`", "~", "*"]
NAMES = SUBSTITUTIONS + WORDS + GLOBS + TERMINAL
# A name that is not UTF-8: the surrogates stand for the raw bytes 0xff 0xfe and 0x9b (the C1 CSI
# of an 8-bit terminal), as os.fsencode writes them.
NON_UTF8 = "h30-\udcff\udcfe-\udc9b"
NON_UTF8_BYTES = os.fsencode(NON_UTF8)

# A directory name holding every kind at once (no "/", no NUL): what a user may `cd` into
# after cloning a repository.
DIRNAME = "d$(touch PWNED)`touch PWNED` *?[x] 'q\"" + OSC52 + CSI + C1 + "-\\n\nl"

# Values a writer quotes for the program that parses it (tests/test_quoting.py): paths, mostly,
# where MARK_TEMPLATE stands for a marker file that any command they hold would touch.
MARK_TEMPLATE = "@MARK@"
QUOTED_VALUES = [
    "/opt/cuda-13.0",
    "/with space/cuda",
    "/it's/cuda",
    '/say "hi"/cuda',
    "/back\\slash/cuda",
    "/trail\\",
    "/\\'$(touch @MARK@)",
    "/$(touch @MARK@)",
    "/`touch @MARK@`",
    "/${HOME}/$HOME/$1",
    "/} ;exec touch @MARK@;#",
    "/{braces}/[touch @MARK@]/{*}{",
    "/a;touch @MARK@;b|c&d",
    "/new\nline; touch @MARK@",
    "/tab\there\r",
    "/100%/%h/%%n",
    "/*?/~user/#hash/!bang",
    "/\u00e9\u00fc \u4e2d \U0001f600",
    "/non-utf8-\udcff\udcfe",
    "/esc-\x1b[31m-del-\x7f",
    "-n",
    "",
]

# -- version file contents -------------------------------------------------------------------------
# What a cloned repository's .cuda-version may say: none of it is a version.
VERSION_TEXTS = {
    "substitution": b"$(touch PWNED)\n",
    "backticks": b"`touch PWNED`\n",
    "traversal": b"../../../tmp/evil\n",
    "osc52": ("13.0" + OSC52 + "\n").encode(),
    "csi": ("1" + CSI + "\n").encode(),
    "c1": "13.0\u009b2J\n".encode(),
    "not-utf8": b"13.\xff\xfe\x9b\n",
    "leading-dash": b"--help\n",
    "glob": b"1*\n",
}

# -- paths ---------------------------------------------------------------------------------------
# Values of a variable that must hold an absolute path (CUDAENV_ROOT): each read relative to
# whatever directory the reader happens to be in, so each must be refused.
NOT_ABSOLUTE = ["~/.cudaenv", "~", "store", "./store/", "../store", "~nosuchuser-xyz/store",
                "a/../store"]


def special_file(path: Path, kind: str) -> Path:
    """Make `path` a file of a hostile kind: a FIFO (a reader that opens it blocks), a symlink to
    one, a dangling symlink, a symlink loop, a directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link-to-fifo":
        os.mkfifo(path.parent / (path.name + ".fifo"))
        path.symlink_to(path.name + ".fifo")
    elif kind == "dangling":
        path.symlink_to(path.parent / "no-such-file")
    elif kind == "loop":
        path.symlink_to(path.name)
    elif kind == "dir":
        path.mkdir()
    else:
        raise AssertionError(kind)
    return path


SPECIAL_KINDS = ("fifo", "link-to-fifo", "dangling", "loop", "dir")

# -- umasks ----------------------------------------------------------------------------------------
UMASKS = (0o000, 0o002, 0o022, 0o077)


def writable_by_others(*trees: Path) -> list[str]:
    """Every directory or regular file under `trees` that group or others may write."""
    found = []
    for tree in trees:
        if not os.path.lexists(tree):
            continue
        for dirpath, dirnames, filenames in os.walk(tree):
            if not os.lstat(dirpath).st_mode & 0o011:
                dirnames[:] = []  # nobody else can reach what is below
            for name in [dirpath, *(os.path.join(dirpath, n) for n in filenames)]:
                st = os.lstat(name)
                if (st.st_mode & 0o022) and not os.path.islink(name) and not (st.st_mode & 0o1000):
                    found.append(f"{name} {oct(st.st_mode & 0o7777)}")
    return found


# -- PATH shapes -----------------------------------------------------------------------------------
# Programs a reader might start by name: the shell side's helpers, the host compilers Python
# probes, what the Action runs. Planted, each records that it ran and fails.
PLANTED = ("stat", "wc", "mkdir", "touch", "timeout", "sleep", "kill", "cat", "head", "dd", "ls", "mktemp",
           "rm", "uname", "sed", "tr", "readlink", "realpath", "id", "find", "gcc", "g++", "cc", "c++", "cpp",
           "clang", "clang++")


def plant(where: Path, marker_dir: Path) -> Path:
    """Programs named as PLANTED in `where`, each creating MARKER-<name> in `marker_dir`."""
    where.mkdir(parents=True, exist_ok=True)
    for name in PLANTED:
        p = where / name
        p.write_text(f"#!/bin/sh\n: >'{marker_dir}/{MARKER}-{name}'\nexit 1\n")
        p.chmod(0o755)
    return where


def path_shapes(base: str, planted_abs: str) -> dict[str, str]:
    """PATH values built on `base`: empty entries (the current directory, to a shell), `.`, a
    relative entry, and a directory of planted programs first."""
    return {
        "empty-first": f":{base}",
        "empty-middle": base.replace(":", "::", 1) if ":" in base else f"{base}::",
        "empty-last": f"{base}:",
        "dot": f".:{base}",
        "relative": f"bin:{base}",
        "planted-first": f"{planted_abs}:{base}",
    }


# -- what no reader may do -----------------------------------------------------------------------

def no_markers(*dirs: Path) -> list[str]:
    """Marker files a planted program or a substitution left anywhere under `dirs`."""
    return sorted({str(p) for d in dirs if d.exists() for p in d.rglob(MARKER + "*")})


def raw_controls(data: bytes) -> list[str]:
    """The raw ESC, BEL and C1 controls in `data`: as UTF-8 characters (U+0080..U+009F) and as
    bytes 0x80..0x9F that are not part of a UTF-8 character."""
    text = data.decode("utf-8", "surrogateescape")
    bad = {ch for ch in text if ch in "\x1b\x07" or "\x80" <= ch <= "\x9f" or "\udc80" <= ch <= "\udc9f"}
    return sorted(repr(ch) for ch in bad)
