"""The repository's Packages index (deb822), read and validated: what apt verified, in a form cudaenv can plan from."""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

from ....foundation.versions import InvalidVersion, Release
from .repository import series, upstream

# Debian package names and versions (Policy 5.6.1, 5.6.12); anything else in an
# index is refused before it reaches a path, a URL or a command line.
NAME_RE = re.compile(r"[a-z0-9][a-z0-9+.-]{1,127}\Z")
VERSION_RE = re.compile(r"(?:[0-9]+:)?[0-9][A-Za-z0-9.+~-]{0,127}\Z")
_FILENAME_RE = re.compile(r"(?:\./)?(?:[A-Za-z0-9_.+~-]+/)*[A-Za-z0-9_.+~:-]+\.deb\Z")
_SHA256_RE = re.compile(r"[0-9a-f]{64}\Z")
_DEP_RE = re.compile(r"\s*([^\s(:]+)(?::\S+)?\s*(?:\(\s*(<<|<=|=|>=|>>|<|>)\s*([^\s)]+)\s*\))?")


def parse_stanzas(text: str) -> list[dict[str, str]]:
    """deb822 stanzas (Packages, status) -> list of {field: value}."""
    out: list[dict[str, str]] = []
    cur: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if not line.strip():
            if cur:
                out.append(cur)
            cur, key = {}, None
        elif line[0] in " \t":
            if key:
                cur[key] += "\n" + line.strip()
        else:
            key, _, value = line.partition(":")
            cur[key] = value.strip()
    if cur:
        out.append(cur)
    return out


def parse_depends(value: str) -> list[list[tuple[str, str | None, str | None]]]:
    """'a (>= 1) | b, c' -> [[(a, '>=', '1'), (b, None, None)], [(c, None, None)]]."""
    groups = []
    for group in value.split(","):
        alts = []
        for alt in group.split("|"):
            m = _DEP_RE.match(alt)
            if m and m.group(1):
                alts.append((m.group(1), m.group(2), m.group(3)))
        if alts:
            groups.append(alts)
    return groups


@dataclass
class IndexEntry:
    name: str
    version: str
    filename: str
    size: int
    sha256: str
    depends: str
    provides: str


class Index:
    """The verified Packages index of the repository: (name, version) -> IndexEntry."""

    def __init__(self, stanzas: list[dict[str, str]], origin: str):
        self.entries: dict[tuple[str, str], IndexEntry] = {}
        for s in stanzas:
            name, version = s.get("Package", ""), s.get("Version", "")
            # An entry we cannot use safely is left out, not trusted halfway.
            if not (NAME_RE.match(name) and VERSION_RE.match(version)):
                continue
            filename, sha = s.get("Filename", ""), s.get("SHA256", "").lower()
            if not _FILENAME_RE.match(filename) or ".." in filename.split("/") or not _SHA256_RE.match(sha):
                continue
            try:
                size = int(s.get("Size", ""))
            except ValueError:
                continue
            deps = ", ".join(v for v in (s.get("Pre-Depends"), s.get("Depends")) if v)
            self.entries[(name, version)] = IndexEntry(name, version, filename, size, sha, deps,
                                                       s.get("Provides", ""))
        self.origin = origin
        self.names = {n for n, _ in self.entries}
        self.provided = self.names | {d[0][0] for e in self.entries.values() for d in parse_depends(e.provides)}

    def versions(self, name: str) -> list[str]:
        return [v for (n, v) in self.entries if n == name]

    def releases(self) -> list[str]:
        """Full releases the repository offers, from the cuda-toolkit-X-Y meta packages."""
        found = set()
        for (name, version) in self.entries:
            m = re.fullmatch(r"cuda-toolkit-(\d+)-(\d+)", name)
            if not m:
                continue
            try:
                rel = Release.parse(upstream(version))
            except InvalidVersion:
                continue
            if (rel.major, rel.minor) == (int(m.group(1)), int(m.group(2))):
                found.add(rel)
        return [str(r) for r in sorted(found)]

    def release_pins(self, release: Release) -> dict[str, str]:
        """{package: version} that make up exactly `release`.

        NVIDIA's meta packages depend with `>=` on each component's version
        of their release, so apt alone would take the newest of every
        component. Following the meta package's constraints down to versions
        that exist pins the release's own composition.
        """
        meta = f"cuda-toolkit-{series(release)}"
        start = [v for v in self.versions(meta) if upstream(v) == str(release)]
        if not start:
            return {}
        pins: dict[str, str] = {meta: start[0]}
        todo = [(meta, start[0])]
        while todo:
            entry = self.entries[todo.pop()]
            for group in parse_depends(entry.depends):
                name, op, version = group[0]
                if op not in (">=", "=") or name in pins:
                    continue
                # `>= 13.0.88` names the upstream version; the package is 13.0.88-1.
                exact = [v for v in self.versions(name) if v == version or upstream(v) == version]
                if exact:
                    pins[name] = max(exact, key=_version_key)
                    todo.append((name, pins[name]))
        return pins

    def foreign_dependencies(self) -> dict[str, str]:
        """{name: a version satisfying its constraints} for every dependency the repository does not provide.

        These are recorded as installed in the private status file so apt never
        plans a system package (libc6, ...) into a toolkit.
        """
        bounds: dict[str, list[tuple[str, str]]] = {}
        for entry in self.entries.values():
            for group in parse_depends(entry.depends):
                for name, op, version in group:
                    if name in self.provided or not NAME_RE.match(name):
                        continue
                    bounds.setdefault(name, [])
                    if op and version and VERSION_RE.match(version):
                        bounds[name].append((op, version))
        chosen = {}
        for name, cons in bounds.items():
            exact = [v for op, v in cons if op == "="]
            lower = [v for op, v in cons if op in (">=", ">>", ">")]
            upper = [v for op, v in cons if op in ("<=", "<<", "<")]
            if exact:
                chosen[name] = exact[0]
            elif lower and not upper:
                chosen[name] = "999999:0"  # newer than any lower bound
            elif lower:
                chosen[name] = max(lower, key=_version_key)
            elif upper:
                chosen[name] = "0~"
            else:
                chosen[name] = "999999:0"
        return chosen


def _version_key(version: str):
    """A sort key good enough to order NVIDIA's numeric versions (not a full dpkg comparison)."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", version.split(":", 1)[-1])]


def read_index_file(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8", "replace")
