"""The doctor's machinery: a finding (Check), the report (Report), and the read-only Context
every check reads, with the fixes checks share (toolkit_fix, env_fix, export_fix, ...).

A check is a function of the Context that yields findings; it formats its texts from the
templates beside it (each subject's module keeps them in one TEXT table) with `ctx.said`.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path

from ... import venvstart
from ...foundation import quoting, store
from ...foundation.versions import major_minor
from ...selecting import selection, versionfile
from .. import consumers, jitcache
from .. import resolver as rs
from ..machine import Probe, release_of
from .facts import has_headers, hook_line, library_users, real

SCHEMA = "cudaenv.doctor/1"
_RANK = {"ok": 0, "warn": 1, "error": 2}


@dataclass
class Check:
    id: str
    status: str  # "ok", "warn", "error"
    verdict: str
    explanation: str = ""
    fix: str | None = None


@dataclass
class Report:
    checks: list[Check]
    probe: Probe
    recommended: str | None
    fix: str | None
    stale_caches: list[jitcache.CacheEntry] = field(default_factory=list)
    consumers: dict = field(default_factory=dict)  # consumer -> consumers.Answer

    @property
    def status(self) -> str:
        return max((c.status for c in self.checks), key=_RANK.__getitem__, default="ok")

    @property
    def exit_code(self) -> int:
        return _RANK[self.status]

    def to_json(self) -> dict:
        return {"schema": SCHEMA, "status": self.status, "exit_code": self.exit_code, "fix": self.fix,
                "recommended": self.recommended, "checks": [asdict(c) for c in self.checks],
                "probe": self.probe.to_json()}


@dataclass(frozen=True)
class Context:
    """What every check reads: the probe, the environment, the consumers' own answers, the
    resolver's recommendation, and the facts derived from them once. Checks never write it."""

    probe: Probe
    env: Mapping[str, str]
    answers: dict  # consumer -> consumers.Answer
    resolution: rs.Resolution
    hook: str  # the line that enables the hook in this shell
    hook_active: bool
    # The toolkit that builds things, its release, and how it was found.
    in_use: str | None
    in_use_release: str | None
    in_use_via: str
    # The store's own toolkits (roots, releases), scanned once: fixes ask of them repeatedly.
    managed: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, p: Probe, env) -> "Context":
        # The hook (and `cudaenv exec`) export CUDAENV_PATH_ENTRY when they apply a selection, and
        # `cudaenv init` puts the shims on PATH; without either, `cudaenv local` changes nothing
        # a running consumer sees.
        shims = str(store.shims_dir(env))
        hook_active = bool(env.get("CUDAENV_PATH_ENTRY")) or shims in (e.rstrip("/") for e in env.get("PATH", "").split(":"))
        # The toolkit that builds things: where torch looks when torch is there (even when
        # that is nowhere), else the selection.
        torch_version = p.python.version("torch") if p.python else None
        torch_l = p.lookup("torch")
        sel = p.selection
        if torch_version and p.torch_cuda:
            in_use = torch_l.path if torch_l else None
            in_use_release = torch_l.release if torch_l else None
            in_use_via = f"torch's lookup ({torch_l.via})" if torch_l else "torch's lookup"
        elif sel and sel.root:
            in_use, in_use_release, in_use_via = sel.root, sel.release, "cudaenv's selection"
        else:
            in_use, in_use_release, in_use_via = None, None, "nothing"
        # Each consumer's own answer where it was asked (live wins over the model).
        answers = consumers.answers(p, env)
        ta = answers.get("torch")
        if ta and ta.live and ta.fields.get("cuda_home") and ta.fields["cuda_home"] != in_use:
            in_use, in_use_via = ta.fields["cuda_home"], "torch itself (_find_cuda_home)"
            in_use_release = release_of(in_use)
        resolution = rs.resolve(p)
        managed = tuple((str(t.root), t.release) for t in store.managed_toolkits(env))
        return cls(p, env, answers, resolution, hook_line(env), hook_active, in_use, in_use_release, in_use_via,
                   managed)

    # --- read-only facts ----------------------------------------------------------------

    @property
    def recommended(self) -> str | None:
        """The release to use: the project's own pin when it satisfies every rule (in the
        resolver's candidates, and without the torch-minor or PTX warnings the resolver's
        choice avoids), else the resolver's. A fix never replaces a working pin with the newest."""
        r, pin = self.resolution.recommended, self.pin
        if not r or not pin or pin[0] == r or pin[0] not in self.resolution.candidates:
            return r
        tc, d = self.probe.torch_cuda, self.probe.driver
        if tc and rs.torch_accepts(pin[0], tc) != "ok":
            return r
        if d and rs.driver_runs(d, pin[0], self.tegra) != "full":
            return r
        return pin[0]

    @cached_property
    def pin(self) -> tuple[str, str, bool] | None:
        """(release minor, file, unreadable) of the version file that selects here, when it names
        a release: an unreadable one too if it only carries a UTF-8 BOM (Windows editors write one)."""
        sel = self.probe.selection
        if sel and sel.source not in ("default", versionfile.ENV_VAR) and re.fullmatch(r"\d+\.\d+(\.\d+)?", sel.version):
            return major_minor(sel.version), sel.source, False
        if not self.probe.selection_error or self.env.get(versionfile.ENV_VAR, "").strip(" \t"):
            return None
        try:
            found = selection.find_version_file(selection.current_dir(self.env))
            if found is None or found.name != versionfile.VERSION_FILE:
                return None
            data = versionfile.read_bytes(found)
            if not data.startswith(b"\xef\xbb\xbf"):
                return None
            spec, _ = versionfile.parse_version_text(data[3:], str(found))
        except (OSError, versionfile.SelectionError):
            return None
        text = spec.text
        return (major_minor(text), str(Path(found)), True) if re.fullmatch(r"\d+\.\d+(\.\d+)?", text) else None

    def local_step(self, release: str) -> str:
        """`cudaenv local X`, run where the selecting .cuda-version is (a project's root, not
        the subdirectory doctor runs in); `env -C` works from every shell."""
        pin = self.pin
        if pin and os.path.basename(pin[1]) == versionfile.VERSION_FILE:
            d = os.path.dirname(pin[1])
            try:
                here = str(selection.current_dir(self.env))
            except versionfile.SelectionError:
                here = None
            if here is None or real(d) != real(here):
                return f"env -C {shlex.quote(d)} cudaenv local {release}"
        return f"cudaenv local {release}"

    @property
    def doctor_fix(self) -> str:
        """`cudaenv doctor --fix --yes --quiet`, judging the same Python as this run."""
        py = self.probe.python
        return "cudaenv doctor --fix --yes --quiet" + (
            f" --python {shlex.quote(py.executable)}" if py and py.source == "--python" else "")

    @property
    def tegra(self) -> bool:
        return bool(self.probe.tegra)

    @property
    def selected_root(self) -> str | None:
        return self.probe.selection.root if self.probe.selection else None

    @property
    def selected_release(self) -> str | None:
        return self.probe.selection.release if self.probe.selection else None

    @property
    def torch_version(self) -> str | None:
        return self.probe.python.version("torch") if self.probe.python else None

    @property
    def flashinfer(self) -> str | None:
        return self.probe.flashinfer

    @cached_property
    def cache_entries(self) -> list[jitcache.CacheEntry]:
        return jitcache.scan(jitcache.usage_of(self.probe, self.answers, self.env), env=self.env)

    @property
    def stale_caches(self) -> list[jitcache.CacheEntry]:
        return [e for e in self.cache_entries if e.stale]

    def has(self, consumer: str) -> bool:
        # A torch without CUDA never looks for a toolkit: its cpp_extension leaves CUDA_HOME None.
        return bool(self.torch_version and self.probe.torch_cuda) if consumer == "torch" else bool(self.flashinfer)

    def selection_serves(self, release: str) -> bool:
        """The selection is `release` and is a whole toolkit (headers included)."""
        return bool(self.selected_release and major_minor(self.selected_release) == release
                    and not self.probe.selection_error and has_headers(self.selected_root))

    def is_managed(self, root: str | None) -> bool:
        return any(real(tk_root) == real(root) for tk_root, _ in self.managed)

    @cached_property
    def loader_env(self) -> Mapping[str, str]:
        """The environment the target Python's own dynamic loader has, which the libraries it
        loads in its own process follow (cuda-pathfinder's, for numba-cuda and cupy): `env`,
        except where doctor runs under a bound venv's interpreter that is the target (its
        CUDAENV_BOUND_VENV) and whose binding set LD_LIBRARY_PATH when it started, after glibc
        had read it (venvstart.LD_AT_START keeps the value that loader has)."""
        at_start, bound, py = self.env.get(venvstart.LD_AT_START), self.env.get(venvstart.MARKER), self.probe.python
        if at_start is None or not bound or not py or real(os.path.dirname(os.path.dirname(py.executable))) != real(bound):
            return self.env
        env = {k: v for k, v in self.env.items() if k != "LD_LIBRARY_PATH"}
        if at_start:
            env["LD_LIBRARY_PATH"] = at_start
        return env

    def installed(self, release: str) -> bool:
        return any(major_minor(rel) == release and has_headers(tk_root) for tk_root, rel in self.managed)

    def ptxas_root(self) -> str | None:
        """The toolkit whose ptxas targets every GPU here: the selection's, else the one in use."""
        for root, rel in ((self.selected_root, self.selected_release), (self.in_use, self.in_use_release)):
            if root and rel and all(rs.can_target(rel, a) for a in self.probe.archs):
                return root
        return None

    # --- fixes --------------------------------------------------------------------------

    def toolkit_fix(self) -> str | None:
        """What makes consumers here use the recommended release: install and select it when
        needed, then apply the selection to this shell."""
        r = self.recommended
        if not r:
            # Only releases no source installs fit: the resolver's way out (a driver), if it has one.
            return next((f.fix for f in self.resolution.findings if f.rule == "not-installable"), None)
        steps = []
        if not self.selection_serves(r):
            if not self.installed(r):
                steps.append(f"cudaenv install {r}{self.install_with}")
            steps.append(self.local_step(r))
        elif real(self.in_use) == real(self.selected_root):
            return None
        elif not self.is_managed(self.selected_root):
            # A system toolkit is selected by default, and the hook leaves the environment alone
            # for it: point the consumers at it directly.
            root = str(self.selected_root)
            return quoting.sh_export({"CUDA_HOME": root, "CUDA_PATH": root}, os.path.join(root, "bin"))
        if not self.hook_active:
            steps.append(self.hook)
        elif not steps:
            # The hook ran, but something set the variables again after it: point them back.
            steps.append(self.export_fix())
        return " && ".join(steps)

    @property
    def install_with(self) -> str:
        """` --with nvrtc` when a library consumer here needs libnvrtc (numba-cuda, cupy): the minimal
        profile leaves it out, and a switch to a toolkit without it would leave that consumer broken."""
        need = sorted({lib for c in library_users(self).values() for lib in c.get("requires", ())})
        return "".join(f" --with {lib}" for lib in need)

    def export_fix(self) -> str:
        """Every variable a consumer reads first, pointed at the selection: CMake takes CUDACXX
        before anything else, torch CUDA_HOME, cuda-pathfinder CUDA_PATH."""
        r = str(self.selected_root)
        return quoting.sh_export({"CUDA_HOME": r, "CUDA_PATH": r, "CUDAToolkit_ROOT": r, "CUDACXX": f"{r}/bin/nvcc"},
                                 path_first=f"{r}/bin")

    def env_fix(self, var: str) -> str | None:
        """A broken CUDA_HOME/CUDA_PATH: point it at the selection when that is the right toolkit,
        else drop it and switch toolkits (exporting the selection would send the user back to it)."""
        r = self.recommended
        if self.selected_root and has_headers(self.selected_root) and (r is None or self.selection_serves(r)):
            return quoting.sh_export({var: self.selected_root})
        tk = self.toolkit_fix()
        return f"unset {var} && {tk}" if tk else f"unset {var}"

    def complete_toolkit_fix(self) -> str | None:
        r = self.recommended or (major_minor(self.in_use_release) if self.in_use_release else None)
        if not r:
            return None
        if self.selection_serves(r) and real(self.selected_root) != real(self.in_use):
            return self.toolkit_fix()
        steps = ([] if self.installed(r) else [f"cudaenv install {r}{self.install_with}"]) + [self.local_step(r)]
        return " && ".join(steps)

    def applied(self, fix: str | None) -> str | None:
        """`fix` with the hook after it where it changes the selection and nothing applies it here."""
        if fix and "cudaenv local " in fix and not self.hook_active and self.hook not in fix:
            # A new selection reaches this shell's consumers only through the hook.
            fix = f"{fix} && {self.hook}"
        return fix

    def finding(self, id: str, status: str, verdict: str, explanation: str = "", fix: str | None = None) -> Check:
        """One check's result; a fix is kept only for a problem."""
        return Check(id, status, verdict, explanation, self.applied(fix) if status != "ok" else None)

    def said(self, id: str, status: str, text: "str | tuple[str, str]", fix: str | None = None, /, **values) -> Check:
        """A finding whose verdict (and explanation) are templates of a TEXT table, filled with `values`."""
        verdict, explanation = (text, "") if isinstance(text, str) else text
        return self.finding(id, status, verdict.format(**values), explanation.format(**values), fix)


Findings = Iterator[Check]
