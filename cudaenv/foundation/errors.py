"""cudaenv's one error model: every error a user can cause or meet is a CudaenvError.

A CudaenvError carries the exit status the CLI ends with and an optional hint
(one more line saying what to do). The CLI's entry point and the fast path
print any of them as `cudaenv: <message>` (then `hint: <hint>`) and exit with
its status, so no command has to catch and map an error by hand.

The subclasses are the kinds of failure a script can tell apart by status;
each module's own errors (selection.NotInstalled, install.BadInput,
sources.base.SourceError, ...) derive from one of them. EXIT_CODES is the one
table of statuses: docs/exit-codes.md and each command's --help are rendered
from it.

This module imports nothing, so the click-free fast path can use it.
"""

from __future__ import annotations

import sys

EX_OK = 0
EX_BAD_INPUT = 1
EX_SOURCE = 2
EX_USAGE = 64  # sysexits.h: a mistyped command line, never confused with 1 (bad input) or 2 (an outage)
EX_SOFTWARE = 70  # sysexits.h: a bug in cudaenv itself
EX_CANNOT_EXECUTE = 126  # as a shell: the command exists but may not be run
EX_NOT_INSTALLED = 127  # what a shell says of a command it cannot find, and the shims say too
EX_INTERRUPTED = 130  # 128 + SIGINT

# status -> (name, what it means); the one place exit statuses are documented.
EXIT_CODES: dict[int, tuple[str, str]] = {
    EX_OK: ("ok", "success"),
    EX_BAD_INPUT: ("bad input", "an invalid version, value or file, or a write refused"),
    EX_SOURCE: ("source failure", "a source, network, verification, disk or smoke-test failure"),
    EX_USAGE: ("usage", "an unknown command or option, a missing or extra argument, a choice not on the list"),
    EX_SOFTWARE: ("internal error", "a bug in cudaenv (CUDAENV_DEBUG=1 shows the traceback)"),
    EX_CANNOT_EXECUTE: ("cannot execute", "exec only: the command is not executable (permission denied)"),
    EX_NOT_INSTALLED: ("not installed", "the selected or named toolkit, or its command, is not installed"),
    EX_INTERRUPTED: ("interrupted", "Ctrl-C or SIGTERM; nothing was left half-installed"),
}

# The statuses each command can end with, for the commands whose own epilog does not list them.
COMMAND_EXIT_CODES: dict[str, tuple[int, ...]] = {
    "version": (0, 1, 127),
    "root": (0, 1),
    "versions": (0, 1),
    "local": (0, 1, 2, 127),
    "global": (0, 1, 2, 127),
    "shell": (0, 1),
    "prefix": (0, 1, 127),
    "which": (0, 1, 127),
    "exec": (1, 126, 127),
    "env": (0, 1, 127),
    "cache": (0, 1),
    "mirror": (0, 1, 2),
    "modulefiles": (0, 1),
    "export": (0, 1),
    "config": (0, 1),
    "venv": (0, 1, 127),
    "rehash": (0, 1),
    "init": (0, 1),
    "completions": (0, 1),
    "commands": (0,),
}

# A sentence before the list, for a command whose statuses are not all cudaenv's own.
COMMAND_EXIT_NOTES = {"exec": "The command's own status once it runs; before that:"}


class CudaenvError(Exception):
    """An error told to the user in one line (plus an optional hint), ending with exit_code."""

    exit_code = EX_BAD_INPUT
    hint: str | None = None

    def __init__(self, message: str = "", *, hint: str | None = None, exit_code: int | None = None):
        super().__init__(message)
        if hint is not None:
            self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code


class InputError(CudaenvError):
    """Bad input: an invalid version, value, option or file."""

    exit_code = EX_BAD_INPUT


class UsageError(CudaenvError):
    """The command line itself is wrong: an unknown command or option, a missing or extra argument."""

    exit_code = EX_USAGE


class NotInstalledError(CudaenvError):
    """The toolkit (or a command in it) that was asked for is not installed."""

    exit_code = EX_NOT_INSTALLED


class SourceFailureError(CudaenvError):
    """A source, the network, a verification or the disk failed while fetching or building."""

    exit_code = EX_SOURCE


class AccessError(CudaenvError):
    """This user may not write where cudaenv must write (a shared or read-only store)."""

    exit_code = EX_BAD_INPUT


class InternalError(CudaenvError):
    """A bug in cudaenv itself, such as a command module that fails to import.

    Users get one line; in development (show_traceback) the entry point prints the traceback too.
    """

    exit_code = EX_SOFTWARE

    def __init__(self, message: str, *, show_traceback: bool = False):
        super().__init__(message, hint="this is a bug in cudaenv; set CUDAENV_DEBUG=1 for the traceback "
                                       "and report it")
        self.show_traceback = show_traceback


def report(error: CudaenvError, stream=None) -> int:
    """Print `error` as the CLI does and return its exit status."""
    stream = stream if stream is not None else sys.stderr
    print(f"cudaenv: {error}", file=stream)
    if error.hint:
        print(f"hint: {error.hint}", file=stream)
    return error.exit_code


def exit_codes_help(command: str) -> str | None:
    """The `Exit codes:` paragraph of `command`'s --help, or None if the command does not have one here."""
    codes = COMMAND_EXIT_CODES.get(command)
    if not codes:
        return None
    rows = [f"  {code:<3}  {EXIT_CODES[code][1]}" for code in codes]
    note = COMMAND_EXIT_NOTES.get(command)
    return "\b\nExit codes:\n" + (f"  {note}\n" if note else "") + "\n".join(rows)


def exit_codes_markdown() -> str:
    """docs/exit-codes.md, rendered from EXIT_CODES."""
    lines = ["# Exit codes", "",
             "<!-- Generated by scripts/gen_cli_reference.py from cudaenv/foundation/errors.py; do not edit. -->", "",
             "Every cudaenv command ends with one of these statuses. Errors are one line on stderr,",
             "`cudaenv: <message>`, sometimes followed by a `hint:` line; never a traceback.",
             "Each command's `--help` lists the statuses it can end with.", "",
             "| status | name | meaning |", "|---|---|---|"]
    lines += [f"| {code} | {name} | {meaning} |" for code, (name, meaning) in EXIT_CODES.items()]
    lines += ["", "A usage error is 64 in every command, so a script can tell a typo from an outage (2);",
              "the line names the word that is wrong and, where one is near, the command or option meant.",
              "With `--json` it is also printed on stdout as a `cudaenv.error/1` object.", "",
              "`resolve` and `doctor` report a machine's state in their status: 0 ok, 1 warnings,",
              "2 errors (and `doctor --output` 3 when the file could not be written).",
              "`cudaenv mirror verify` ends with 2 when the mirror is missing, corrupt or extra files.", ""]
    return "\n".join(lines)
