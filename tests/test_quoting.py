"""Every output another program parses is quoted for that program (cudaenv/foundation/quoting.py).

One hostile corpus (quotes, backslashes, $( ), backticks, braces, ;, newlines, %, non-UTF-8
bytes, ...) goes through each writer and then through the real consumer: bash, dash, zsh,
fish, tclsh and Environment Modules' modulecmd.tcl, Lmod, systemd (systemd-analyze's own unit
parser), Docker (`docker run --env-file`, or Docker's documented env-file rules when no daemon
answers) and a shell reading the same dotenv file, PyYAML, and Prometheus (promtool and
node_exporter's parser). Each value either comes back exactly or is refused with one line
(quoting.Unquotable), and nothing the corpus holds ever runs: every command in it touches a
marker file, which must never appear.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cudaenv.selecting import activation
from cudaenv.exporting import modulefiles, spack
from cudaenv.foundation import quoting
from cudaenv.exporting.modulefiles import Entry
from hostile import MARK_TEMPLATE, QUOTED_VALUES

# The values are tests/hostile.py's, with the rest of the project's hostile corpus.
MARK = MARK_TEMPLATE
CORPUS = QUOTED_VALUES


def corpus(marker: Path) -> list[str]:
    return [v.replace(MARK, str(marker)) for v in CORPUS]


@pytest.fixture
def marker(tmp_path):
    m = tmp_path / "RAN"
    yield m
    assert not m.exists(), "a value of the corpus ran a command"


def quoted_or_refused(quote, value):
    """quote(value), or None when it is refused with exactly one line."""
    try:
        return quote(value)
    except quoting.Unquotable as e:
        assert "\n" not in str(e) and str(e), repr(e)
        return None


def _read(path: Path) -> str:
    return os.fsdecode(path.read_bytes())


def _refused_only_for(fmt: str, refused: list[str]):
    """What each format may refuse: only the bytes it cannot hold, never an ordinary path."""
    for v in refused:
        assert "\udcff" in v or (fmt in ("dotenv",)) or (fmt in ("tcl", "lmod") and re.search(r"[\x00-\x1f\x7f]", v)), \
            (fmt, v)


# --- POSIX shells and fish --------------------------------------------------------------------

@pytest.mark.parametrize("shell", ["bash", "dash", "zsh"])
def test_sh_round_trips_through_real_shells(tmp_path, marker, shell):
    if not shutil.which(shell):
        pytest.skip(f"{shell} is not installed")
    values = corpus(marker)
    script = b""
    for i, v in enumerate(values):
        script += os.fsencode(f"v={quoting.sh(v)}\nprintf '%s' \"$v\" > {tmp_path}/out{i}\n")
    (tmp_path / "s.sh").write_bytes(script)
    r = subprocess.run([shell, str(tmp_path / "s.sh")], capture_output=True)
    assert r.returncode == 0, r.stderr
    for i, v in enumerate(values):
        assert _read(tmp_path / f"out{i}") == v


def test_env_shell_sh_and_fish_round_trip_a_hostile_root(tmp_path, marker):
    """`cudaenv env --shell sh|fish` (activation.render) for a root holding the corpus."""
    if not shutil.which("fish"):
        pytest.skip("fish is not installed")
    refused = []
    for i, v in enumerate(corpus(marker)):
        variables = {"CUDA_HOME": v, "PATH": f"{v}/bin:/usr/bin:/bin"}
        for fmt, shell, show in (("sh", "bash", 'printf "%s" "$CUDA_HOME"'),
                                 ("fish", "fish", 'printf "%s" "$CUDA_HOME"')):
            text = quoted_or_refused(lambda _: activation.render(variables, fmt), v)
            if text is None:
                refused.append((fmt, v))
                continue
            out = tmp_path / f"{fmt}{i}"
            script = os.fsencode(text + f"{show} > {out}\n")
            r = subprocess.run([shell, "-c", script], capture_output=True)
            assert r.returncode == 0, (fmt, v, r.stderr)
            assert _read(out) == v, (fmt, v)
    # fish is a text shell: only the non-UTF-8 value may be refused, and only by fish.
    assert all(fmt == "fish" and "\udcff" in v for fmt, v in refused), refused


def test_fish_quote_round_trips_through_fish(tmp_path, marker):
    if not shutil.which("fish"):
        pytest.skip("fish is not installed")
    refused = []
    script = ""
    values = corpus(marker)
    for i, v in enumerate(values):
        q = quoted_or_refused(quoting.fish, v)
        if q is None:
            refused.append(v)
            continue
        script += f"set v {q}\nprintf '%s' \"$v\" > {tmp_path}/out{i}\n"
    r = subprocess.run(["fish", "-c", script], capture_output=True)
    assert r.returncode == 0, r.stderr
    for i, v in enumerate(values):
        if v not in refused:
            assert _read(tmp_path / f"out{i}") == v, v
    _refused_only_for("fish", refused)


# --- Tcl, Environment Modules and Lmod --------------------------------------------------------

def test_tcl_quote_round_trips_through_tclsh_in_a_braced_body(tmp_path, marker):
    """As render_tcl uses it: a word in a proc body (braced) and a plain `set`."""
    tclsh = shutil.which("tclsh8.6") or shutil.which("tclsh")
    if not tclsh:
        pytest.skip("tclsh is not installed (apt-get install tcl8.6)")
    values = corpus(marker)
    refused = []
    script = "fconfigure stdout -translation binary\n"
    for i, v in enumerate(values):
        q = quoted_or_refused(quoting.tcl, v)
        if q is None:
            refused.append(v)
            continue
        script += (f"proc p{i} {{ }} {{ return {q} }}\nset v {q}\n"
                   f"set f [open {{{tmp_path}/a{i}}} w]; fconfigure $f -translation lf -encoding utf-8; "
                   f"puts -nonewline $f $v; close $f\n"
                   f"set f [open {{{tmp_path}/b{i}}} w]; fconfigure $f -translation lf -encoding utf-8; "
                   f"puts -nonewline $f [p{i}]; close $f\n")
    (tmp_path / "t.tcl").write_text(script, encoding="utf-8")
    r = subprocess.run([tclsh, str(tmp_path / "t.tcl")], capture_output=True, text=True, env={**os.environ, "LC_ALL": "C.UTF-8"})
    assert r.returncode == 0, r.stderr
    for i, v in enumerate(values):
        if v not in refused:
            assert _read(tmp_path / f"a{i}") == v == _read(tmp_path / f"b{i}"), v
    _refused_only_for("tcl", refused)


def _module_load(tmp_path, fmt: str, values: list[str]) -> dict[int, str]:
    """Write one modulefile per value with the real writer, load each with the real tool, and
    return CUDA_HOME as the shell saw it (after `module help`, which runs the Tcl help proc)."""
    from test_modulefiles import module_prelude

    prelude = module_prelude(fmt)
    mf = tmp_path / f"mf-{fmt}"
    render = modulefiles.render_lua if fmt == "lmod" else modulefiles.render_tcl
    script = prelude + f"module use {mf}\n"
    written = {}
    for i, v in enumerate(values):
        text = quoted_or_refused(lambda root: render(Entry(f"13.0.{i}", root, "test")), v)
        if text is None:
            continue
        name = f"13.0.{i}" + (".lua" if fmt == "lmod" else "")
        (mf / "cuda").mkdir(parents=True, exist_ok=True)
        (mf / "cuda" / name).write_text(text, encoding="utf-8")
        written[i] = v
        script += (f"module help cuda/13.0.{i} >/dev/null 2>&1\nmodule load cuda/13.0.{i}\n"
                   f"printf '%s' \"$CUDA_HOME\" > {tmp_path}/{fmt}{i}\nmodule purge\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MODULEPATH": "", "LC_ALL": "C.UTF-8"}
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, env=env)
    got = {}
    for i in written:
        out = tmp_path / f"{fmt}{i}"
        got[i] = _read(out) if out.exists() else f"<not loaded: {r.stderr[-300:]}>"
    return {i: (written[i], got[i]) for i in written}


@pytest.mark.parametrize("fmt", ["tcl", "lmod"])
def test_modulefiles_round_trip_through_the_real_module_tools(tmp_path, marker, fmt):
    values = corpus(marker)
    results = _module_load(tmp_path, fmt, values)
    for want, got in results.values():
        assert got == want
    refused = [v for i, v in enumerate(values) if i not in results]
    _refused_only_for(fmt, refused)


def test_modulefiles_command_skips_a_root_a_modulefile_cannot_hold(tmp_path):
    """`cudaenv modulefiles` skips a toolkit whose root holds a control character, in one line
    naming it, and writes the others."""
    from toolkits import base_env, make_toolkit

    make_toolkit(tmp_path / "sys" / "cuda-13.0-\x1b[31m", "13.0.2")
    make_toolkit(tmp_path / "sys" / "cuda-12.8", "12.8.1")
    env = base_env(tmp_path / "root", search=str(tmp_path / "sys" / "cuda-*"))
    r = subprocess.run([sys.executable, "-m", "cudaenv", "modulefiles", str(tmp_path / "mf")], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stderr
    lines = [l for l in (r.stdout + r.stderr).splitlines() if "control character" in l]
    assert len(lines) == 1 and "cuda-13.0-\\x1b[31m" in lines[0], r.stdout + r.stderr
    assert sorted(p.name for p in (tmp_path / "mf" / "cuda").iterdir() if p.name.startswith("1")) == ["12.8.1.lua"]


# --- systemd ---------------------------------------------------------------------------------

def _systemd_environment(tmp_path: Path, i: int, body: str) -> str | None:
    """The Environment systemd's own unit parser made of `body` (systemd-analyze verify, which
    dumps the parsed unit at debug level), or None when it rejected the line."""
    units = tmp_path / f"units{i}"
    units.mkdir()
    (units / "t.service").write_text(f"[Service]\nExecStart=/bin/true\n{body}", encoding="utf-8")
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(units / "t.service")], capture_output=True,
                       env={**os.environ, "SYSTEMD_LOG_LEVEL": "debug", "SYSTEMD_UNIT_PATH": f"{units}:"})
    text = os.fsdecode(r.stdout + r.stderr)
    m = re.search(r"\n\t\tEnvironment: (.*?)\n\t\t[A-Z][A-Za-z]+:", text, re.S)
    return m.group(1) if m else None


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")
def test_systemd_round_trips_through_systemds_parser(tmp_path, marker):
    values = corpus(marker)
    refused = []
    for i, v in enumerate(values):
        text = quoted_or_refused(lambda _: activation.render({"V": v}, "systemd"), v)
        if text is None:
            refused.append(v)
            continue
        assert text.startswith("[Service]\n")
        got = _systemd_environment(tmp_path, i, text.split("\n", 1)[1])
        assert got == f"V={v}", (v, got)
    _refused_only_for("systemd", refused)


# --- dotenv: Docker and shells --------------------------------------------------------------

def docker_env_file(text: str) -> dict[str, str]:
    """Docker's env-file rules (docker/cli opts/envfile.go, parseKeyValueFile): each line has its
    leading whitespace trimmed; empty lines and lines starting with # are skipped; the name is
    what comes before the first =, and must have no whitespace; the value is everything after
    it, literally (no quotes, no escapes, no expansion); a line that is not UTF-8 is an error."""
    out = {}
    for n, line in enumerate(text.split("\n"), 1):
        line = line.lstrip()
        if not line or line.startswith("#"):
            continue
        name, eq, value = line.partition("=")
        assert eq and not re.search(r"\s", name), f"line {n}: docker rejects {line!r}"
        out[name] = value
    return out


def _docker_image() -> str | None:
    image = os.environ.get("CUDAENV_TEST_DOCKER_BASE") or "cudaenv-test/python-base:bookworm"
    if not shutil.which("docker"):
        return None
    r = subprocess.run(["docker", "image", "inspect", image], capture_output=True, timeout=60)
    return image if r.returncode == 0 else None


def test_dotenv_is_read_alike_by_docker_and_by_shells(tmp_path, marker):
    values = corpus(marker)
    accepted, refused = {}, []
    for v in values:
        for name, value in (("CUDA_HOME", v), ("PATH", f"{v}/bin:/usr/bin:/bin")):
            q = quoted_or_refused(lambda _: activation.render({name: value}, "dotenv"), value)
            if q is None:
                refused.append(v)
                break
            accepted[f"V{len(accepted)}"] = (value, q.split("=", 1)[1].rstrip("\n"))
    text = "".join(f"{k}={line}\n" for k, (_, line) in accepted.items())
    (tmp_path / "t.env").write_text(text)
    want = {k: value for k, (value, _) in accepted.items()}
    # Docker's rules, then each shell that sources the file.
    assert docker_env_file(text) == want
    for shell in ("bash", "dash", "zsh"):
        if not shutil.which(shell):
            continue
        dump = "; ".join(f'printf "%s\\0" "${k}"' for k in want)
        r = subprocess.run([shell, "-c", f"set -a; . {tmp_path}/t.env; {dump}"], capture_output=True)
        assert r.returncode == 0, r.stderr
        assert dict(zip(want, os.fsdecode(r.stdout).split("\0"))) == want, shell
    # Only values that cannot be written unquoted are refused, and an ordinary path is not.
    assert "/opt/cuda-13.0" not in refused and "/100%/%h/%%n" not in refused
    assert "/with space/cuda" in refused and "/$(touch " + str(marker) + ")" in refused


def test_dotenv_through_a_real_docker_run(tmp_path):
    image = _docker_image()
    if image is None:
        pytest.skip("no Docker daemon with a local base image here (scripts/ci_docker.sh builds one); "
                    "test_dotenv_is_read_alike_by_docker_and_by_shells applies Docker's documented rules")
    values = [v for v in corpus(tmp_path / "RAN") if quoted_or_refused(lambda x: quoting.dotenv("V", x), v) is not None]
    text = "".join(quoting.dotenv(f"V{i}", v) + "\n" for i, v in enumerate(values))
    (tmp_path / "t.env").write_text(text)
    dump = f"import os,sys; sys.stdout.write(chr(0).join(os.environ['V' + str(i)] for i in range({len(values)})))"
    r = subprocess.run(["docker", "run", "--rm", "--network=none", "--env-file", str(tmp_path / "t.env"), image,
                        "python3", "-c", dump], capture_output=True, text=True, timeout=300)
    if r.returncode != 0 and "Cannot connect to the Docker daemon" in r.stderr:
        pytest.skip("the Docker daemon does not answer")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\0") == values


def test_env_format_dotenv_refuses_in_one_line(tmp_path):
    """The command refuses a root the dotenv form cannot hold, in one line, exit 1, nothing written."""
    from toolkits import base_env, make_toolkit

    root = make_toolkit(tmp_path / "odd root" / "cuda-13.0", "13.0.2")
    env = base_env(tmp_path / "store", search=str(root))
    r = subprocess.run([sys.executable, "-m", "cudaenv", "env", "--format", "dotenv", "system"], capture_output=True,
                       text=True, env=env, cwd=tmp_path)
    assert r.returncode == 1 and r.stdout == "", r.stdout
    assert len(r.stderr.strip().splitlines()) == 1 and "dotenv" in r.stderr and "CUDA_HOME" in r.stderr, r.stderr


# --- YAML (Spack) -----------------------------------------------------------------------------

def test_spack_yaml_round_trips_through_pyyaml(marker):
    values = corpus(marker)
    refused = []
    for v in values:
        text = quoted_or_refused(lambda root: spack.render([Entry("13.0.2", root, "test")]), v)
        if text is None:
            refused.append(v)
            continue
        data = yaml.safe_load(text)
        assert data["packages"]["cuda"]["externals"] == [{"spec": "cuda@13.0.2", "prefix": v}], v
    _refused_only_for("yaml", refused)


# --- Prometheus -----------------------------------------------------------------------------

def test_prometheus_labels_round_trip_through_promtool_and_node_exporter(tmp_path, marker):
    import test_prometheus as tp

    values = corpus(marker)
    refused, kept = [], []
    lines = ["# HELP cudaenv_test_info Corpus.", "# TYPE cudaenv_test_info gauge"]
    for v in values:
        q = quoted_or_refused(quoting.prometheus, v)
        if q is None:
            refused.append(v)
            continue
        lines.append(f'cudaenv_test_info{{i="{len(kept)}",v={q}}} 1')
        kept.append(v)
    text = "\n".join(lines) + "\n"
    if tp.PROMTOOL:
        lint = subprocess.run([tp.PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout + lint.stderr
    if tp.NODE_EXPORTER is None:
        pytest.skip("node_exporter is not installed (apt-get install prometheus-node-exporter)")
    d = tmp_path / "textfile"
    d.mkdir()
    (d / "t.prom").write_text(text)
    served = tp.scrape_textfile_collector(d)
    assert tp.samples(served, "node_textfile_scrape_error") == [({}, 0)]
    got = {int(labels["i"]): labels["v"] for labels, _ in tp.samples(served, "cudaenv_test_info")}
    assert [got[i] for i in range(len(kept))] == kept
    _refused_only_for("prometheus", refused)


# --- doctor's printed fixes -------------------------------------------------------------------

def test_doctor_fix_with_a_hostile_root_pastes_right_in_bash(tmp_path, marker):
    """`export CUDA_HOME=<root> ...` as doctor prints it, pasted into bash: the same root, nothing run."""
    for v in corpus(marker):
        if not v:
            continue
        fix = quoted_or_refused(lambda r: quoting.sh_export({"CUDA_HOME": r, "CUDA_PATH": r}, r + "/bin"), v)
        assert fix is not None
        out = tmp_path / "out"
        script = os.fsencode(f'PATH=/usr/bin:/bin\n{fix}\nprintf "%s\\0%s\\0%s" "$CUDA_HOME" "$CUDA_PATH" "$PATH" > {out}\n')
        r = subprocess.run(["bash", "-c", script], capture_output=True)
        assert r.returncode == 0, r.stderr
        assert os.fsdecode(out.read_bytes()).split("\0") == [v, v, f"{v}/bin:/usr/bin:/bin"]


def test_doctor_prints_quoted_fixes(tmp_path):
    """A toolkit under a directory with a space and a $( ): doctor's fix line is quoted for sh."""
    sys.path.insert(0, str(Path(__file__).parent))
    from fakemachine import Machine

    m = Machine(tmp_path / "a b $(x)", torch=None)
    tk = m.system_toolkit("13.0.2")
    r = m.cli("doctor", "--json", env=m.env(CUDA_HOME=str(tk), CUDA_PATH="/nonexistent"))
    import json

    fixes = [c["fix"] for c in json.loads(r.stdout)["checks"] if c.get("fix") and "export" in c["fix"]]
    assert fixes, r.stdout
    for fix in fixes:
        assert "'" in fix and f"={tk}" not in fix, fix


# --- the shell hook and the shims directory it puts on PATH ----------------------------------

@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_init_for_a_store_under_a_hostile_path(tmp_path, shell):
    """`cudaenv init - SHELL` names the shims directory (under CUDAENV_ROOT) in the shell's own
    quoting: a store under a directory holding quotes, $( ), backticks and braces loads in the real
    shell, the shims directory arrives on PATH exactly, and nothing in the path runs."""
    if not shutil.which(shell):
        pytest.skip(f"{shell} is not installed")
    marker = tmp_path / "RAN"
    store = tmp_path / f"it's \"odd\" $(touch {marker}) `touch {marker}` {{a}} \\ ;x" / "cudaenv"
    store.mkdir(parents=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CUDAENV_ROOT": str(store),
           "PYTHONPATH": str(Path(__file__).resolve().parent.parent), "CUDAENV_SYSTEM_SEARCH": ""}
    init = subprocess.run([sys.executable, "-m", "cudaenv", "init", "-", shell], capture_output=True, text=True,
                          env=env)
    assert init.returncode == 0, init.stderr
    (tmp_path / "init").write_text(init.stdout)
    show = 'printf "%s\\n" $PATH' if shell == "fish" else 'printf "%s\\n" "$PATH" | tr : "\\n"'
    load = f"source {tmp_path}/init" if shell == "fish" else f". {quoting.sh(str(tmp_path / 'init'))}"
    argv = [shell, "--no-config", "-c"] if shell == "fish" else [shell, "-f", "-c"] if shell == "zsh" else \
        [shell, "--norc", "--noprofile", "-c"]
    r = subprocess.run([*argv, f"{load}\n{show}\n"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert str(store / "shims") in r.stdout.splitlines(), r.stdout
    assert not marker.exists()
