"""Which toolkits are installed, read from the alias table: the one list that
`whence`, `latest`, `versions --executables` and the "exists in these toolkits"
hint of `which`/`exec` share.

The alias table already names every toolkit cudaenv can select (managed and
discovered), so listing it needs no discovery and no nvcc run.
"""

from __future__ import annotations

import os

from ..foundation import store
from ..foundation.versions import InvalidVersion, Release, Spec, newest_match, parse_spec, release_key


class Installed:
    __slots__ = ("release", "root", "origin")

    def __init__(self, release: str, root: str, origin: str):
        self.release, self.root, self.origin = release, root, origin

    def has_program(self, name: str) -> bool:
        path = os.path.join(self.root, "bin", name)
        return os.path.isfile(path) and os.access(path, os.X_OK)

    def programs(self) -> list[str]:
        try:
            entries = list(os.scandir(os.path.join(self.root, "bin")))
        except OSError:
            return []
        names = []
        for e in entries:
            try:
                if not e.name.startswith(".") and e.is_file() and os.access(e.path, os.X_OK):
                    names.append(e.name)
            except OSError:
                continue
        return sorted(names)


def installed() -> list[Installed]:
    """Every selectable toolkit once, oldest release first (as pyenv lists versions)."""
    from . import alias_lookup, aliases

    if aliases.is_stale():
        # A toolkit copied in or removed by hand: the same refresh a lookup does.
        alias_lookup.lookup(parse_spec("system"))
    d = store.aliases_dir()
    try:
        names = os.listdir(d)
    except OSError:
        return []
    by_release: dict[str, Installed] = {}
    for name in names:
        # Full releases and `system` name every toolkit once (the shim's hint
        # reads the same files).
        if name != "system" and name.count(".") != 2:
            continue
        try:
            parse_spec(name)
        except InvalidVersion:
            continue
        entry = aliases.read_entry(d / name)
        if entry is None or not os.path.isdir(os.path.join(entry.root, "bin")):
            continue
        # One line per release, as the shim's hint has it.
        by_release.setdefault(entry.release, Installed(entry.release, entry.root, entry.origin))
    return sorted(by_release.values(), key=lambda t: (release_key(t.release), t.root))


def with_program(name: str) -> list[Installed]:
    """The installed toolkits whose bin/ holds the program `name`."""
    return [t for t in installed() if t.has_program(name)]


# pyenv's wording; the shim's rare half prints the same (cudaenv.selecting.shims.shared_facts).
EXISTS_IN = "The '{name}' command exists in these toolkits: {releases}"


def exists_in_hint(name: str) -> str | None:
    """pyenv's hint: the other toolkits that do have a program, or None."""
    found = with_program(name)
    if not found:
        return None
    return EXISTS_IN.format(name=name, releases=", ".join(t.release for t in found))


def latest(spec: Spec, releases) -> str | None:
    """The newest release string that `spec` matches, as pyenv's `latest` picks."""
    parsed: dict[Release, str] = {}
    for text in releases:
        try:
            parsed.setdefault(Release.parse(text), text)  # keep the text: "13.0" stays "13.0"
        except InvalidVersion:
            continue
    best = newest_match(spec, parsed)
    return None if best is None else parsed[best]
