#!/usr/bin/env python3
"""Line coverage of the shell code (shims/select.sh, select-rare.sh, shim.sh,
shim-rare.sh, hook.sh, hook.fish) under the test suite.

The shell code runs in subprocesses the tests start (a shim exec'd through its
`#!/bin/sh` line, an init file sourced by bash or fish), so no Python coverage
tool sees it. This script runs the chosen test files with a sitecustomize
that changes, for that run only, what cudaenv renders:

  * every template starts with a marker command, `: shellcov <template> <line>`
    (the next line is that line of that template), and the shim keeps its
    comment lines, so a traced line maps back to the template it came from;
  * a shim re-executes itself under bash, and both the shim and the bash init
    turn on xtrace to a log (BASH_XTRACEFD, PS4='+${BASH_SOURCE}:${LINENO}: ').
    dash has no usable line trace, so the shim's common path is measured as
    bash runs it: the same code, with `read -n` where dash reads to the newline;
  * hook.fish gets a probe before each statement (after a block opener such
    as `else` or `case`, and inside `and`/`or`): fish 3's fish_trace names no
    line, and `set` keeps $status, so a probe changes no outcome. The probes
    are flushed to a log when fish exits.

zsh runs select.sh, select-rare.sh and hook.sh too, under `emulate sh`; it is
not traced (its own code, hook.zsh, is a few lines). Tests that look at what
the shell does at the process level (strace: no process started, the bytes a
read takes) or at the shim's first line fail in this run, and the lines they
reach are still counted: a shell's trace is complete when it exits, before any
assertion runs.

    python scripts/shell_coverage.py                       # the default test files
    python scripts/shell_coverage.py tests/test_hooks.py   # these only (pytest arguments)
    python scripts/shell_coverage.py --unreached            # also list every line no test reaches
    python scripts/shell_coverage.py --json out.json

Executable lines are the lines that hold a command: not blank or comment
lines, function headers, `fi`/`done`/`esac`/`;;`/`}`, `case` patterns with no
command, or the first lines of a command that continues (bash reports a
multi-line command at its last line).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SH_TEMPLATES = ("select.sh", "select-rare.sh", "shim.sh", "shim-rare.sh", "hook.sh", "hook.bash")
FISH = "hook.fish"
DEFAULT_TESTS = ["tests/test_selection_sh.py", "tests/test_shims.py", "tests/test_hooks.py",
                 "tests/test_mutation_survivors.py", "tests/test_shared_store.py", "tests/test_shared_roots.py",
                 "tests/test_hostile_cli.py", "tests/test_pyenv_parity.py", "tests/test_store_root.py"]

# The sitecustomize of the traced run. It patches cudaenv.selecting.shims (and cudaenv.selecting.shell's copy of
# its names) as the process starts; the test processes and every `python -m cudaenv` they run
# inherit PYTHONPATH, so rehash and init render instrumented text.
SITECUSTOMIZE = r'''
import os
if os.environ.get("SHELLCOV_LOG"):
    try:
        import cudaenv.selecting.shims as _s
        import cudaenv.selecting.shell as _sh
    except Exception:
        pass
    else:
        import re as _re
        _template = _s.template
        _FISH_OPENERS = _re.compile(r"(else|case|function|while|for|begin)\b")

        def _fish(text):
            out = ["if set -q SHELLCOV_FISH_LOG",
                   "    function __cudaenv_cov_flush --on-event fish_exit",
                   "        printf '%s\\n' $__cudaenv_cov >>$SHELLCOV_FISH_LOG 2>/dev/null",
                   "    end",
                   "end"]
            for n, line in enumerate(text.split("\n"), 1):
                s = line.strip()
                pad = line[: len(line) - len(line.lstrip())]
                probe = f"set -ga __cudaenv_cov {n}"
                if not s or s.startswith("#") or s == "end" or s.startswith("end "):
                    out.append(line)
                elif s.startswith(("and ", "or ")):
                    word = s.split(" ", 1)[0]
                    out.append(f"{pad}{word} {probe}; {s}")
                elif _FISH_OPENERS.match(s):
                    out += [line, pad + "    " + probe]
                else:
                    out += [pad + probe, line]
            return "\n".join(out)

        def template(name):
            text = _template(name)
            if name == "hook.fish":
                return _fish(text)
            if name == "shim.sh":
                # The splice of select.sh replaces one line: say where shim.sh resumes.
                lines = text.split("\n")
                at = lines.index("# @SELECT_LIB@") + 1
                lines[at - 1] = f"# @SELECT_LIB@\n: shellcov shim.sh {at + 1}"
                lines[0] += "\n: shellcov shim.sh 2"  # after the #! line, which stays first
                return "\n".join(lines)
            return f": shellcov {name} 1\n" + text

        # Only where the log opens (a test may run the shell as another user).
        _PROLOGUE = ("if [ -n \"${SHELLCOV_LOG-}\" ] && [ -n \"${BASH_VERSION-}\" ] && "
                     "{ exec 7>>\"$SHELLCOV_LOG\"; } 2>/dev/null; then "
                     "BASH_XTRACEFD=7; PS4='+${BASH_SOURCE}:${LINENO}: '; set -x; fi\n")
        _render_shim, _render_init = _s.render_shim, _sh.render_init

        def render_shim(rare=None):
            first, rest = _render_shim(rare).split("\n", 1)
            return (first + "\n[ -n \"${BASH_VERSION-}\" ] || exec /bin/bash \"$0\" \"$@\"\n" + _PROLOGUE + rest)

        def render_init(shell):
            text = _render_init(shell)
            return _PROLOGUE + text if shell == "bash" else text

        _s.template = template
        _s._strip_comment_lines = lambda text: text
        _s.render_shim = render_shim
        _sh.template = template
        _sh.render_init = render_init
        for _name in ("render_shim",):
            try:
                import cudaenv.selecting.rehash as _r
                setattr(_r, _name, render_shim)
            except Exception:
                pass
'''

_MARKER = re.compile(r"^\+{1,}(?P<src>[^:]*):(?P<line>\d+): : shellcov (?P<name>\S+) (?P<k>\d+)$")
_TRACE = re.compile(r"^\+{1,}(?P<src>[^:]*):(?P<line>\d+): (?P<cmd>.*)$")
_STRUCTURAL = re.compile(r"^(fi|done|esac|;;|\}|\{|else|then|do|\)|\};?|\} *[<>|].*|done *[<>|].*)$")
_FUNC = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\(\) *\{$")
_PATTERN_ONLY = re.compile(r"^[^()]*\)( *;;)?$")


def executable_sh(lines: list[str]) -> set[int]:
    """Line numbers (1-based) of the lines that hold a command bash traces: a command
    continued with a backslash is traced at its first line, one with a multi-line
    string at its last."""
    out = set()
    open_quote = continued = False
    for n, raw in enumerate(lines, 1):
        s = raw.strip()
        starts_open, was_continued = open_quote, continued
        continued = s.endswith("\\") and not s.startswith("#")
        # An odd number of unescaped double quotes (outside single quotes) opens or closes a string.
        if len(re.findall(r'(?<!\\)"', re.sub(r"'[^']*'", "", s))) % 2 == 1:
            open_quote = not open_quote
        if open_quote or was_continued:
            continue
        if starts_open:
            out.add(n)
            continue
        if not s or s.startswith("#") or _STRUCTURAL.match(s) or _FUNC.match(s):
            continue
        if s.endswith("{") and not s.endswith(("|| {", "&& {")) and s.count("{") > s.count("}"):
            continue
        if _PATTERN_ONLY.match(s) and "$(" not in s and not s.startswith("("):
            continue  # a `case` pattern with no command: bash traces nothing for it
        out.add(n)
    return out


def executable_fish(lines: list[str]) -> set[int]:
    return {n for n, raw in enumerate(lines, 1)
            if (s := raw.strip()) and not s.startswith("#") and s != "end" and not s.startswith("end ")}


def parse_trace(log: Path, templates: dict[str, list[str]]) -> dict[str, set[int]]:
    """Template -> the lines the trace shows run. A traced line belongs to the template of the
    nearest marker above it in the same source; a line whose command's first word is not in
    that template line (the outer script around an `eval`) is not counted."""
    markers: dict[str, list[tuple[int, str, int]]] = defaultdict(list)
    records: list[tuple[str, int, str]] = []
    with open(log, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = _MARKER.match(line)
            if m:
                entry = (int(m["line"]), m["name"], int(m["k"]))
                if entry not in markers[m["src"]]:
                    markers[m["src"]].append(entry)
                continue
            m = _TRACE.match(line)
            if m:
                records.append((m["src"], int(m["line"]), m["cmd"]))
    for src in markers:
        markers[src].sort()
    hit: dict[str, set[int]] = defaultdict(set)
    for src, lineno, cmd in records:
        best = None
        for at, name, k in markers.get(src, ()):
            if at < lineno:
                best = (at, name, k)
            else:
                break
        if best is None:
            continue
        at, name, k = best
        n = k + (lineno - at - 1)
        text = templates.get(name)
        if not text or not 1 <= n <= len(text):
            continue
        word = cmd.split(" ", 1)[0].strip("'\"")
        word = word.split("=", 1)[0] + ("=" if "=" in word else "")
        window = " ".join(text[max(0, n - 4):n])  # a multi-line command: its lines up to this one
        if word and word.rstrip("=") not in window and word not in ("[", "'['", "test"):
            continue
        hit[name].add(n)
    return hit


def parse_fish(log: Path) -> set[int]:
    if not log.exists():
        return set()
    return {int(x) for x in log.read_text().split() if x.isdigit()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pytest_args", nargs="*", help=f"test files and pytest options (default: {' '.join(DEFAULT_TESTS)})")
    ap.add_argument("--unreached", action="store_true", help="list every executable line no test reached")
    ap.add_argument("--json", metavar="FILE", help="write the per-template results as JSON")
    ap.add_argument("--keep", metavar="DIR", help="keep the trace logs in DIR")
    opts = ap.parse_args(argv)
    args = opts.pytest_args or DEFAULT_TESTS

    with tempfile.TemporaryDirectory(prefix="cudaenv-shellcov-") as tmp:
        work = Path(opts.keep) if opts.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        site = work / "site"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(textwrap.dedent(SITECUSTOMIZE))
        log, fish_log = work / "sh.trace", work / "fish.trace"
        for p in (log, fish_log):
            p.write_text("")
            p.chmod(0o666)  # tests that run a shell as another user append too
        env = dict(os.environ, SHELLCOV_LOG=str(log), SHELLCOV_FISH_LOG=str(fish_log),
                   PYTHONPATH=os.pathsep.join([str(site), str(REPO), os.environ.get("PYTHONPATH", "")]))
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               f"--basetemp={work / 'pytest'}", *args], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        minutes = (time.monotonic() - started) / 60
        (work / "pytest.log").write_text(proc.stdout)  # kept with --keep: which tests failed, and why
        summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""

        templates = {name: (REPO / "shims" / name).read_text().split("\n") for name in (*SH_TEMPLATES, FISH)}
        hits = parse_trace(log, templates)
        hits[FISH] = parse_fish(fish_log)

    results = {}
    total_exec = total_hit = 0
    for name, lines in templates.items():
        exe = executable_fish(lines) if name == FISH else executable_sh(lines)
        got = hits.get(name, set()) & exe
        total_exec += len(exe)
        total_hit += len(got)
        results[name] = {"executable": len(exe), "reached": len(got),
                         "unreached": [(n, lines[n - 1].strip()) for n in sorted(exe - got)]}
    print(f"pytest: {summary} ({minutes:.1f} min; failures are expected where a test inspects the "
          f"shell at the process level)")
    print(f"{'template':<16} {'lines':>6} {'reached':>8} {'%':>6}")
    for name, r in results.items():
        pct = 100 * r["reached"] / r["executable"] if r["executable"] else 100.0
        print(f"{name:<16} {r['executable']:>6} {r['reached']:>8} {pct:>5.1f}%")
    print(f"{'total':<16} {total_exec:>6} {total_hit:>8} {100 * total_hit / max(total_exec, 1):>5.1f}%")
    if opts.unreached:
        for name, r in results.items():
            for n, text in r["unreached"]:
                print(f"  shims/{name}:{n}: {text}")
    if opts.json:
        Path(opts.json).write_text(json.dumps({"tests": args, "pytest": summary, "minutes": round(minutes, 1),
                                               "templates": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
