"""The configuration files: the settings of cudaenv/foundation/settings.py, in TOML, per user and per system.

    # ~/.config/cudaenv/config.toml
    source = "pypi"                 # CUDAENV_SOURCE
    cache_dir = "/scratch/cudaenv"  # CUDAENV_CACHE_DIR
    download_jobs = 8               # CUDAENV_DOWNLOAD_JOBS

Keys are the variables' names without `CUDAENV_`, in lower case. The environment wins over the
user's file, which wins over the system's. A file is read only if it belongs to this user or to
root and no one else may write it (the rule ssh applies to ~/.ssh): another user's file is
skipped with a one-line warning, never obeyed. Anything else wrong with a file (not TOML, an
unknown key, a setting the shell reads itself, a value that is not a string, number or boolean)
stops the command with one line naming the file and the key.
"""

from __future__ import annotations

import os
import stat
import sys

from .errors import InputError
from .terminal import shown

MAX_BYTES = 64 * 1024


class ConfigError(InputError):
    pass


def _toml():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the same parser, from PyPI (a dependency there)
        import tomli as tomllib
    return tomllib


def _trusted(path: str, st: os.stat_result) -> str | None:
    """Why the file may not be obeyed, or None."""
    me = os.geteuid()
    if st.st_uid not in (me, 0):
        return f"it belongs to uid {st.st_uid}, not to you or root"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "others may write it"
    parent = os.stat(os.path.dirname(os.path.abspath(path)))
    if parent.st_uid not in (me, 0) or (parent.st_mode & stat.S_IWOTH and not parent.st_mode & stat.S_ISVTX):
        return "its directory is another user's, or writable by anyone"
    return None


def _spelled(setting, value, path: str) -> str:
    """A TOML value as the environment variable would spell it."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        if "\0" in value or "\n" in value:
            raise ConfigError(f"{shown(path)}: {setting.key}: a value may not hold a newline or NUL")
        return value
    raise ConfigError(f"{shown(path)}: {setting.key}: give a string, number or boolean, not {type(value).__name__}")


def read_file(path: str, by_key: dict) -> dict[str, str] | None:
    """name -> value from one file; None when there is none (or it is skipped, with a warning).

    `by_key` is settings.BY_KEY, passed in: settings reads the files, so this module cannot import it."""
    from .safeopen import open_regular

    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigError(f"{shown(path)}: cannot be read ({e.strerror or e})") from None
    with os.fdopen(fd, "rb") as f:
        why = _trusted(path, os.fstat(f.fileno()))
        if why:
            print(f"cudaenv: warning: ignoring {path}: {why}", file=sys.stderr)
            return None
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ConfigError(f"{shown(path)}: larger than {MAX_BYTES} bytes; a configuration file is a few lines")
    toml = _toml()
    try:
        table = toml.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, toml.TOMLDecodeError) as e:
        raise ConfigError(f"{shown(path)}: not valid TOML ({e})") from None
    out: dict[str, str] = {}
    for key, value in table.items():
        setting = by_key.get(key)
        if setting is None:
            import difflib

            near = difflib.get_close_matches(key, list(by_key), n=1)
            raise ConfigError(f"{shown(path)}: unknown setting {key[:40]!r}" + (f" (did you mean {near[0]}?)" if near else "")
                              + "; `cudaenv config` lists them")
        if not setting.in_files:
            raise ConfigError(f"{shown(path)}: {key} cannot be set in a configuration file: the shims and hooks read "
                              f"{setting.name} from the environment; export it in your shell's rc file")
        out[setting.name] = _spelled(setting, value, path)
    return out


def read_files(files: list[tuple[str, str]], by_key: dict) -> dict[str, tuple[str, str]]:
    """name -> (value, path): the files in order, a later one overriding an earlier one."""
    merged: dict[str, tuple[str, str]] = {}
    for _scope, path in files:
        values = read_file(path, by_key)
        for name, value in (values or {}).items():
            merged[name] = (value, path)
    return merged
