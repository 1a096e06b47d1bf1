"""The host compiler: NVIDIA's own crt/host_config.h against this machine's real compilers.

Real, not a model: the 11.8 header comes from NVIDIA's PyPI wheel (nvidia_headers.py), the
compilers are Debian's gcc 12 and gcc-11/g++-11 (.ci/run installs them), and the 13.0 test
runs the real nvcc. A toolkit built as tests/toolkits.py makes them carries the real header,
and its bin/nvcc runs what nvcc runs first: `<host compiler> -E -x c++ -D__CUDACC__ ...
-include cuda_runtime.h`, with the host compiler nvcc would pick (NVCC_CCBIN, else gcc).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import nvidia_headers
from real_toolkit import DEFAULT, real_toolkit, require
from toolkits import BANNER, base_env, component_for, managed

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
GCC11 = shutil.which("g++-11", path="/usr/bin")
CLI_DIR = os.path.dirname(shutil.which("cudaenv") or sys.executable)
REFUSED_118 = "#error -- unsupported GNU version! gcc versions later than 11 are not supported!"


def cudaenv(env, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def gcc_major() -> int:
    out = subprocess.run(["gcc", "-dumpversion"], capture_output=True, text=True).stdout
    return int(out.split(".")[0])


# nvcc's first step, as the real one runs it (see `nvcc -dryrun`): the host compiler
# preprocesses the source with cuda_runtime.h included, which includes crt/host_config.h.
# Builtins only (printf, parameter expansion), so it runs on a PATH that holds nothing but compilers.
FIRST_STEP = """#!/bin/sh
if [ "$1" = "--version" ]; then
printf '%s' '{banner}'
exit 0
fi
root=${{0%/bin/*}}
exec "${{NVCC_CCBIN:-gcc}}" -E -x c++ -D__CUDACC__ -D__NVCC__ -I"$root/include" -include cuda_runtime.h "$@" -o /dev/null
"""


def toolkit_with_header(store_root: Path, release: str, header: Path) -> Path:
    """A managed toolkit (tests/toolkits.py) carrying NVIDIA's real header, whose nvcc runs nvcc's first step."""
    root = managed(store_root, release)
    (root / "include" / "crt").mkdir(parents=True)
    shutil.copy(header, root / "include" / "crt" / "host_config.h")
    (root / "include" / "cuda_runtime.h").write_text(
        "#define __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__\n#include \"crt/host_config.h\"\n")
    short = ".".join(release.split(".")[:2])
    (root / "bin" / "nvcc").write_text(FIRST_STEP.format(banner=BANNER.format(short=short,
                                                                             component=component_for(release))))
    return root


def host_env(store_root: Path, **extra) -> dict:
    env = base_env(store_root, **extra)
    env["PATH"] = f"/usr/local/bin:/usr/bin:/bin:{CLI_DIR}"
    for var in ("CC", "CXX", "CUDAHOSTCXX", "NVCC_CCBIN", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"):
        env.pop(var, None)
    env.update(extra)
    return env


# --- 1. the facts: the table is the headers' own logic ------------------------------------------

def _installed_toolkits() -> list[Path]:
    roots = {real_toolkit(), DEFAULT}
    return sorted(r for r in roots if (r / "include" / "crt" / "host_config.h").is_file())


def test_table_agrees_with_every_installed_toolkits_header():
    """CI's check: each real toolkit the tests use has its header read and compared with the table."""
    import gen_host_compilers

    roots = _installed_toolkits()
    if not roots:
        pytest.skip(f"no real toolkit with include/crt/host_config.h at {real_toolkit()} or {DEFAULT}")
    table = json.loads((REPO / "cudaenv" / "data" / "host_compilers.json").read_text())
    assert gen_host_compilers.local_checks([str(r) for r in roots], table) == []


def test_the_header_is_run_not_retyped():
    """The rules follow the header's text: a real 13.0 header with its gcc bound edited gives the edited bound,
    and its special cases (Grace clang, ICX, MSVC, ICC, xlC) come out as the header says."""
    from cudaenv.selecting import hostcc_rules

    roots = _installed_toolkits()
    if not roots:
        pytest.skip(f"no real toolkit with include/crt/host_config.h at {real_toolkit()} or {DEFAULT}")
    text = (roots[0] / "include" / "crt" / "host_config.h").read_bytes()
    rules = hostcc_rules.evaluate_header(text)
    assert rules["gcc"] == {"accepts": [None, "15"], "overridable": True}
    assert rules["clang"]["accepts"] == ["3.3", "20"]
    assert rules["grace_clang"]["accepts"] == ["16.0", "20"]
    assert rules["icx"] == {"accepts": False, "overridable": True}
    assert rules["icc"] == {"accepts": False, "overridable": False}  # outside the -allow-unsupported-compiler block
    assert rules["msvc"]["accepts"] == [1920, 1949]
    assert rules["xlc"]["accepts"] == ["13.1", "16.1"]
    edited = text.replace(b"#if __GNUC__ > 15", b"#if __GNUC__ > 13")
    assert edited != text
    assert hostcc_rules.evaluate_header(edited)["gcc"]["accepts"] == [None, "13"]


@pytest.mark.network
def test_generator_check_reads_pypis_118_header():
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_host_compilers.py"), "--version", "11.8.89"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "11.8.89: gcc up to 11.x; clang 3.3 to 14.x" in r.stdout


# --- 2. the real 11.8 header against Debian's compilers -----------------------------------------

@pytest.mark.network
def test_real_118_header_refuses_debian_gcc_as_nvccs_first_step_does(tmp_path):
    if gcc_major() <= 11:
        pytest.skip(f"this machine's gcc is {gcc_major()}, which 11.8 accepts")
    root = toolkit_with_header(tmp_path / "root", "11.8.0", nvidia_headers.header("11.8.89"))
    (tmp_path / "k.cu").write_text("int main() { return 0; }\n")
    env = host_env(tmp_path / "root")
    p = subprocess.run([str(root / "bin" / "nvcc"), str(tmp_path / "k.cu")], env=env, capture_output=True, text=True)
    assert p.returncode != 0 and REFUSED_118 in p.stderr, p.stderr


def _need_gcc11():
    if not GCC11:
        pytest.skip("no /usr/bin/g++-11 (Debian: apt-get install gcc-11 g++-11; .ci/run installs them)")


@pytest.fixture
def store118(tmp_path):
    """A store with 11.8.0 (the real header) and 13.0.2, rehashed; a project selecting 11.8."""
    if gcc_major() <= 11:
        pytest.skip(f"this machine's gcc is {gcc_major()}, which 11.8 accepts")
    store_root = tmp_path / "root"
    tk = toolkit_with_header(store_root, "11.8.0", nvidia_headers.header("11.8.89"))
    managed(store_root, "13.0.2")
    env = host_env(store_root)
    r = cudaenv(env, "rehash")
    assert r.returncode == 0, r.stderr
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".cuda-version").write_text("11.8\n")
    (proj / "k.cu").write_text("int main() { return 0; }\n")
    return store_root, tk, env, proj


@pytest.mark.network
def test_cudaenv_selects_gcc11_and_the_check_passes_in_every_mode(store118):
    _need_gcc11()
    store_root, tk, env, proj = store118
    chosen = (store_root / "host-compiler" / "11.8").read_text().splitlines()
    assert chosen[0] == str(tk) and os.path.realpath(chosen[1]) == os.path.realpath(GCC11)
    assert not (store_root / "host-compiler" / "13.0").exists()  # 13.0 accepts gcc 12: nothing to apply
    env = dict(env, PWD=str(proj))
    # The shim.
    p = subprocess.run([str(store_root / "shims" / "nvcc"), "k.cu"], env=env, cwd=proj, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # exec.
    p = cudaenv(env, "exec", "--", "nvcc", "k.cu", cwd=proj)
    assert p.returncode == 0, p.stderr
    # env, every format.
    for args in (["--format", "sh"], ["--shell", "fish"], ["--format", "dotenv"], ["--format", "json"],
                 ["--format", "systemd"]):
        out = cudaenv(env, "env", *args, cwd=proj).stdout
        fmt = args[1]
        assert "NVCC_CCBIN" in out and "CUDAHOSTCXX" in out and chosen[1] in out, (fmt, out)
    # The bash, zsh and fish hooks.
    for shell, exe in (("bash", ["bash", "--norc", "--noprofile"]), ("zsh", ["zsh", "-f"]),
                       ("fish", ["fish", "--no-config"])):
        if not shutil.which(exe[0]):
            continue
        init = cudaenv(env, "init", "-", shell).stdout
        script = proj.parent / f"s.{shell}"
        prompt = "emit fish_prompt" if shell == "fish" else ("eval \"$PROMPT_COMMAND\"" if shell == "bash"
                                                             else "for f in $precmd_functions; do $f; done")
        script.write_text(init + f"\ncd {proj}\n{prompt}\necho \"ccbin=$NVCC_CCBIN\"\nnvcc k.cu\necho rc={'$status' if shell == 'fish' else '$?'}\n"
                          f"cd {proj.parent}\n{prompt}\necho \"after=$NVCC_CCBIN\"\n")
        p = subprocess.run(exe + [str(script)], env=env, cwd=proj.parent, capture_output=True, text=True, timeout=60)
        assert f"ccbin={chosen[1]}" in p.stdout, (shell, p.stdout, p.stderr)
        assert "rc=0" in p.stdout and REFUSED_118 not in p.stderr, (shell, p.stdout, p.stderr)
        assert "after=\n" in p.stdout, (shell, p.stdout)  # leaving the project takes it away again
    # doctor says what it did.
    d = cudaenv(dict(env, NVCC_CCBIN=chosen[1], CUDAHOSTCXX=chosen[1], CUDAENV_CCBIN=chosen[1]), "doctor", "--json",
                cwd=proj)
    finding = next(c for c in json.loads(d.stdout)["checks"] if c["id"] == "host-compiler")
    assert finding["status"] == "ok" and "cudaenv applies gcc 11" in finding["verdict"], finding
    assert "refused" in finding["verdict"] and "gcc up to 11.x" in finding["verdict"]


# One table of cases, passed by activation.user_compiler (Python: exec, env) and by
# _cudaenv_host_compiler (the shell: shims and hooks): which environments keep their own compiler.
OURS = "/usr/bin/g++-11"
CASES = [
    ({}, True),
    ({"CC": "gcc-12"}, False),
    ({"CXX": "g++-12"}, False),
    ({"CUDAHOSTCXX": "/usr/bin/g++-12"}, False),
    ({"NVCC_CCBIN": "/usr/bin/g++-12"}, False),
    ({"NVCC_PREPEND_FLAGS": "-ccbin=/usr/bin/g++-12"}, False),
    ({"NVCC_PREPEND_FLAGS": "-O2 -ccbin /usr/bin/g++-12"}, False),
    ({"NVCC_APPEND_FLAGS": "--compiler-bindir=/usr/bin/g++-12"}, False),
    ({"NVCC_PREPEND_FLAGS": "-O2 -lineinfo"}, True),
    # What cudaenv applied before is not the user's: replaced, not kept.
    ({"NVCC_CCBIN": "/opt/old/g++", "CUDAHOSTCXX": "/opt/old/g++", "CUDAENV_CCBIN": "/opt/old/g++"}, True),
]


@pytest.mark.network
@pytest.mark.parametrize("extra,applies", CASES, ids=[",".join(c[0]) or "nothing" for c in CASES])
def test_a_compiler_the_user_named_is_never_replaced(store118, extra, applies):
    _need_gcc11()
    from cudaenv.selecting import activation

    store_root, tk, env, proj = store118
    cc = (store_root / "host-compiler" / "11.8").read_text().splitlines()[1]
    env = dict(env, PWD=str(proj), **extra)
    (tk / "bin" / "probe-env").write_text("#!/bin/sh\necho \"NVCC_CCBIN=$NVCC_CCBIN\"\n")
    (tk / "bin" / "probe-env").chmod(0o755)
    (store_root / "extra-shims").write_text("probe-env\n")
    assert cudaenv(env, "rehash").returncode == 0
    expected = cc if applies else extra.get("NVCC_CCBIN", "")
    py = activation.toolkit_env(tk, env)
    assert py.get("NVCC_CCBIN", env.get("NVCC_CCBIN", "")) == expected, py
    sh = subprocess.run([str(store_root / "shims" / "probe-env")], env=env, cwd=proj, capture_output=True,
                        text=True).stdout.strip()
    assert sh == f"NVCC_CCBIN={expected}", (sh, extra)


HOOK_SHELLS = (("bash", ["bash", "--norc", "--noprofile"], 'eval "$PROMPT_COMMAND"', "export {}={}", "unset {}"),
               ("zsh", ["zsh", "-f"], "for f in $precmd_functions; do $f; done", "export {}={}", "unset {}"),
               ("fish", ["fish", "--no-config"], "emit fish_prompt", "set -gx {} {}", "set -e {}"))


@pytest.mark.network
@pytest.mark.parametrize("var,value", [("CXX", "/usr/bin/g++-12"), ("NVCC_CCBIN", "/usr/bin/g++-12"),
                                       ("NVCC_PREPEND_FLAGS", "-ccbin=/usr/bin/g++-12")])
@pytest.mark.parametrize("shell", [s[0] for s in HOOK_SHELLS])
def test_a_compiler_the_user_names_mid_shell_wins_at_the_next_prompt(store118, shell, var, value):
    """In a shell where the hook applied gcc 11 for 11.8, the user names a compiler of their own:
    at the next prompt the hook takes its own away (before, its CUDAHOSTCXX and NVCC_CCBIN
    stayed until the next cd, and CMake built with gcc 11 under the user's CXX). Taking the
    user's setting away again brings cudaenv's choice back."""
    _need_gcc11()
    store_root, tk, env, proj = store118
    _, exe, prompt, set_, unset = next(s for s in HOOK_SHELLS if s[0] == shell)
    if not shutil.which(exe[0]):
        pytest.skip(f"{shell} is not installed")
    cc = (store_root / "host-compiler" / "11.8").read_text().splitlines()[1]
    init = cudaenv(env, "init", "-", shell).stdout
    show = 'echo "n=$NVCC_CCBIN h=$CUDAHOSTCXX ours=$CUDAENV_CCBIN"'
    script = proj.parent / f"s.{shell}"
    script.write_text(init + f"\ncd {proj}\n{prompt}\n{show}\n{set_.format(var, repr(value))}\n{prompt}\n{show}\n"
                      f"{unset.format(var)}\n{prompt}\n{show}\n")
    p = subprocess.run(exe + [str(script)], env=dict(env, PWD=str(proj.parent)), cwd=proj.parent,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stderr == "", (p.stdout, p.stderr)
    lines = [line for line in p.stdout.splitlines() if line.startswith("n=")]
    applied = f"n={cc} h={cc} ours={cc}"
    users = f"n={value if var == 'NVCC_CCBIN' else ''} h= ours="
    assert lines == [applied, users, applied], (shell, var, lines)


@pytest.mark.network
def test_a_refused_choice_of_the_user_is_said(store118):
    store_root, tk, env, proj = store118
    env = dict(env, PWD=str(proj), CXX="/usr/bin/g++-12")
    d = cudaenv(env, "doctor", "--json", cwd=proj)
    finding = next(c for c in json.loads(d.stdout)["checks"] if c["id"] == "host-compiler")
    assert finding["status"] == "error", finding
    assert "the host compiler CXX names, gcc 12.2" in finding["verdict"] and "refused by CUDA 11.8" in finding["verdict"]
    assert "gcc versions later than 11 are not supported" in finding["explanation"]
    assert finding["fix"] == "unset CXX" if GCC11 else finding["fix"].startswith("sudo apt-get install g++-11")


@pytest.mark.network
def test_without_a_compatible_compiler_doctor_and_install_say_what_to_install(tmp_path):
    """A machine with only gcc 12: PATH holds just gcc and g++, and no versioned compiler is searched for."""
    if gcc_major() <= 11:
        pytest.skip(f"this machine's gcc is {gcc_major()}, which 11.8 accepts")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("gcc", "g++", "cc", "c++"):
        os.symlink(shutil.which(name), bindir / name)
    store_root = tmp_path / "root"
    toolkit_with_header(store_root, "11.8.0", nvidia_headers.header("11.8.89"))
    env = host_env(store_root, CUDAENV_HOST_COMPILER_SEARCH=str(tmp_path / "none"))
    env["PATH"] = f"{bindir}:{CLI_DIR}"
    assert cudaenv(env, "rehash").returncode == 0
    assert not (store_root / "host-compiler" / "11.8").exists()
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".cuda-version").write_text("11.8\n")
    d = cudaenv(dict(env, PWD=str(proj)), "doctor", "--json", cwd=proj)
    report = json.loads(d.stdout)
    finding = next(c for c in report["checks"] if c["id"] == "host-compiler")
    assert finding["status"] == "error" and finding["verdict"] == "no host compiler here that CUDA 11.8 accepts"
    assert REFUSED_118.removeprefix("#error -- ") in finding["explanation"]
    if os.path.exists("/etc/debian_version"):
        assert finding["fix"] == "sudo apt-get install g++-11 && cudaenv rehash"
    assert d.returncode == 2
    # The warning `install` ends with, for the same toolkit.
    from cudaenv.commands import install as install_cmd

    p = subprocess.run([sys.executable, "-c", "import sys; from cudaenv.commands.install import _warn_host_compiler; "
                        f"_warn_host_compiler({str(store_root / 'versions' / '11.8.0')!r}, '11.8.0')"],
                       env=env, capture_output=True, text=True)
    assert install_cmd is not None
    assert re.search(r"warning: CUDA 11\.8\.0 refuses the host compiler gcc 12\.\d+ .* no compiler here fits "
                     r"\(it accepts gcc up to 11\.x; clang 3\.3 to 14\.x\); .*g\+\+-11", p.stderr), p.stderr


# --- 2. a real 13.0 nvcc and a compiler outside its range ------------------------------------------

def test_real_nvcc_13_refuses_gcc16_and_cudaenv_applies_a_fitting_one(tmp_path):
    """A gcc whose predefined __GNUC__ is 16 (a wrapper around Debian's gcc: no gcc 16 in Debian 12)
    is nvcc's default; the real nvcc refuses it; after rehash the shim's nvcc compiles."""
    real = require("nvcc")
    wrap = tmp_path / "gcc16"
    wrap.mkdir()
    for name, real_cc in (("gcc", "gcc-12"), ("g++", "g++-12"), ("cc", "gcc-12"), ("c++", "g++-12")):
        target = shutil.which(real_cc, path="/usr/bin")
        if not target:
            pytest.skip(f"no /usr/bin/{real_cc} to wrap")
        (wrap / name).write_text(f"#!/bin/sh\nexec {target} -U__GNUC__ -D__GNUC__=16 \"$@\"\n")
        (wrap / name).chmod(0o755)
    store_root = tmp_path / "root"
    env = host_env(store_root, CUDAENV_SYSTEM_SEARCH=str(real))
    env["PATH"] = f"{wrap}:/usr/local/bin:/usr/bin:/bin:{CLI_DIR}"
    (tmp_path / "k.cu").write_text("__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n")
    plain = subprocess.run([str(real / "bin" / "nvcc"), "-c", "k.cu", "-o", "k.o"], env=env, cwd=tmp_path,
                           capture_output=True, text=True)
    assert plain.returncode != 0 and "unsupported GNU version! gcc versions later than 15" in plain.stderr, plain.stderr
    assert cudaenv(env, "rehash").returncode == 0
    cc = (store_root / "host-compiler" / "system").read_text().splitlines()[1]
    assert re.fullmatch(r"/usr/bin/g\+\+-1[1-5]", cc), cc
    (tmp_path / ".cuda-version").write_text("system\n")
    fixed = subprocess.run([str(store_root / "shims" / "nvcc"), "-c", "k.cu", "-o", "k.o"],
                           env=dict(env, PWD=str(tmp_path)), cwd=tmp_path, capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stderr
    assert (tmp_path / "k.o").read_bytes()[:4] == b"\x7fELF"


@pytest.mark.network
def test_exec_and_env_say_when_the_users_compiler_is_refused(store118):
    _need_gcc11()
    store_root, tk, env, proj = store118
    env = dict(env, PWD=str(proj), CXX="/usr/bin/g++-12")
    for args in (["exec", "--", "true"], ["env"]):
        r = cudaenv(env, *args, cwd=proj)
        assert r.returncode == 0, r.stderr
        assert re.search(r"warning: CXX names gcc 12\.\d+ \(/usr/bin/g\+\+-12\), which this toolkit refuses "
                         r"\(unsupported GNU version!\); cudaenv leaves your choice alone: unset CXX to use "
                         r"/usr/bin/g\+\+-11", r.stderr), r.stderr
        assert "NVCC_CCBIN" not in r.stdout
    r = cudaenv(dict(env, CXX="/usr/bin/g++-11"), "env", cwd=proj)
    assert "warning" not in r.stderr  # an accepted choice of the user's: nothing to say


def test_the_docs_excerpt_is_the_data():
    """docs/host-compilers.md's table says what host_compilers.json says for each release's newest nvcc."""
    from cudaenv.selecting import hostcc_rules

    table = json.loads((REPO / "cudaenv" / "data" / "host_compilers.json").read_text())["components"]
    text = (REPO / "docs" / "host-compilers.md").read_text()
    rows = re.findall(r"^\| (\d+\.\d+) \| up to (\d+) \| ([\d.]+) to (\d+) \|", text, re.M)
    assert len(rows) >= 5
    for release, gcc_max, clang_min, clang_max in rows:
        comp = max((c for c in table if c.startswith(release + ".")), key=hostcc_rules.version_key)
        rules = table[comp]["rules"]
        assert rules["gcc"]["accepts"] == [None, gcc_max], release
        assert rules["clang"]["accepts"] == [clang_min, clang_max], release


# --- done when: `cudaenv install 11.8 && cudaenv local 11.8` on Debian 12 --------------------------

def _mirror_118(tmp_path: Path):
    """A loopback redist mirror of 11.8.0 (tests/redist_mirror.py) whose cuda_nvcc archive carries
    NVIDIA's real crt/host_config.h and an nvcc that runs nvcc's first step."""
    from redist_mirror import RedistMirror, package_entries

    m = RedistMirror(tmp_path / "mirror", platforms=("linux-x86_64",))
    m.add_release("11.8.0", packages=("cuda_nvcc", "cuda_cudart", "cuda_cccl"))
    header = nvidia_headers.header("11.8.89").read_text()
    first_step = FIRST_STEP.format(banner=BANNER.format(short="11.8", component=component_for("11.8.0")))
    entries = [e for e in package_entries("cuda_nvcc", "11.8.0") if e[0] != "bin/nvcc"]
    entries += [("bin/nvcc", "file", first_step, 0o755), ("include/crt", "dir", None, 0o755),
                ("include/crt/host_config.h", "file", header, 0o644)]
    m.add_package("11.8.0", "cuda_nvcc", entries=entries)
    runtime = [e for e in package_entries("cuda_cudart", "11.8.0") if e[0] != "include/cuda_runtime.h"]
    runtime.append(("include/cuda_runtime.h", "file",
                    "#define __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__\n#include \"crt/host_config.h\"\n", 0o644))
    m.add_package("11.8.0", "cuda_cudart", entries=runtime)
    return m


@pytest.mark.network
def test_install_118_and_local_118_give_a_shell_whose_nvcc_check_passes(tmp_path):
    _need_gcc11()
    if gcc_major() <= 11:
        pytest.skip(f"this machine's gcc is {gcc_major()}, which 11.8 accepts")
    from httpserver import FileServer

    m = _mirror_118(tmp_path)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "k.cu").write_text("int main() { return 0; }\n")
    with FileServer(m.root) as srv:
        env = host_env(tmp_path / "root", CUDAENV_REDIST_URL=srv.url)
        init = cudaenv(env, "init", "-", "bash").stdout
        script = tmp_path / "session.bash"
        script.write_text(init + f"\ncd {proj}\ncudaenv install 11.8 --source redist\ncudaenv local 11.8\n"
                          "echo \"ccbin=$NVCC_CCBIN\"\nnvcc k.cu && echo compiled\n")
        p = subprocess.run(["bash", "--norc", "--noprofile", str(script)], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert "installed CUDA 11.8.0" in p.stdout, p.stdout + p.stderr
    assert "compiled" in p.stdout and REFUSED_118 not in p.stderr, p.stdout + p.stderr
    cc = re.search(r"^ccbin=(.*)$", p.stdout, re.M).group(1)
    assert os.path.realpath(cc) == os.path.realpath(GCC11)
    assert "warning" not in p.stderr


@pytest.mark.network
def test_install_118_without_gcc11_warns_and_doctor_says_what_to_install(tmp_path):
    if gcc_major() <= 11:
        pytest.skip(f"this machine's gcc is {gcc_major()}, which 11.8 accepts")
    from httpserver import FileServer

    m = _mirror_118(tmp_path)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("gcc", "g++", "cc", "c++"):
        os.symlink(shutil.which(name), bindir / name)
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "k.cu").write_text("int main() { return 0; }\n")
    with FileServer(m.root) as srv:
        env = host_env(tmp_path / "root", CUDAENV_REDIST_URL=srv.url,
                       CUDAENV_HOST_COMPILER_SEARCH=str(tmp_path / "none"))
        env["PATH"] = f"{bindir}:{CLI_DIR}"
        r = cudaenv(env, "install", "11.8", "--source", "redist", cwd=proj)
    assert r.returncode == 0, r.stderr
    assert re.search(r"warning: CUDA 11\.8\.0 refuses the host compiler gcc 12", r.stderr), r.stdout + r.stderr
    assert cudaenv(env, "local", "11.8", cwd=proj).returncode == 0
    d = cudaenv(dict(env, PWD=str(proj)), "doctor", "--json", cwd=proj)
    finding = next(c for c in json.loads(d.stdout)["checks"] if c["id"] == "host-compiler")
    assert finding["status"] == "error", finding
    if os.path.exists("/etc/debian_version"):
        assert finding["fix"] == "sudo apt-get install g++-11 && cudaenv rehash"
    # Before any build: the build itself would fail exactly as doctor said.
    p = subprocess.run([str(tmp_path / "root" / "shims" / "nvcc"), "k.cu"], env=dict(env, PWD=str(proj)), cwd=proj,
                       capture_output=True, text=True)
    assert p.returncode != 0 and REFUSED_118 in p.stderr


def test_versioned_compilers_are_looked_for_only_in_absolute_directories(tmp_path, monkeypatch):
    """A relative directory (".") would make rehash run whatever the current directory holds."""
    from cudaenv.selecting import hostcc

    planted = tmp_path / "g++-99"
    planted.write_text("#!/bin/sh\ntouch ran\n")
    planted.chmod(0o755)
    real = tmp_path / "sys"
    real.mkdir()
    (real / "g++-98").write_text("#!/bin/sh\n")
    (real / "g++-98").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    env = {"PATH": f".:{real}", "CUDAENV_HOST_COMPILER_SEARCH": f".:relative/dir::{real}"}
    assert hostcc.candidate_paths(env) == [str(real / "g++-98")]


# --- where a compiler may come from: absolute PATH entries for the default, the system's own
# directories (CUDAENV_HOST_COMPILER_SEARCH), owned and written by nobody else, for a choice --------

# A toolkit whose nvcc component the table lacks (11.6.99): its rules come from its own header,
# through `cpp` on PATH. The header's check is nvcc's: gcc later than 11 is refused.
HEADER_11 = b"""#if defined(__GNUC__)
#if __GNUC__ > 11
#error -- unsupported GNU version! gcc versions later than 11 are not supported!
#endif
#endif
"""

# Every name a relative or empty PATH entry could lend a compiler lookup; each leaves a marker.
PLANTED_NAMES = ("gcc", "cc", "cpp", "g++", "c++", "clang", "g++-99", "clang++-99")


def _toolkit_116(store_root: Path, tmp_path: Path) -> Path:
    header = tmp_path / "host_config.h"
    header.write_bytes(HEADER_11)
    return toolkit_with_header(store_root, "11.6.2", header)


def _planted(d: Path, marker: Path) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for name in PLANTED_NAMES:
        (d / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\nexit 1\n")
        (d / name).chmod(0o755)


def test_relative_and_empty_path_entries_never_lend_the_host_compiler(tmp_path):
    """A cloned repository holding gcc, cpp and g++-N in its top and its bin/: with PATH's
    relative (`bin`, `.`) and empty entries first, rehash, local, env and doctor run in it run
    none of them, and the choice is still /usr/bin's g++-11."""
    _need_gcc11()
    if gcc_major() <= 11:
        pytest.skip(f"this machine's gcc is {gcc_major()}, which the header's bound 11 accepts")
    store_root = tmp_path / "root"
    tk = _toolkit_116(store_root, tmp_path)
    repo = tmp_path / "repo"
    marker = tmp_path / "ran"
    _planted(repo, marker)
    _planted(repo / "bin", marker)
    env = host_env(store_root)
    env["PATH"] = f":bin:.::/usr/local/bin:/usr/bin:/bin:{CLI_DIR}:"
    r = cudaenv(env, "rehash", cwd=repo)
    assert r.returncode == 0, r.stderr
    assert (store_root / "host-compiler" / "11.6").read_text() == f"{tk}\n{GCC11}\n"
    assert cudaenv(env, "local", "11.6", cwd=repo).returncode == 0
    assert cudaenv(env, "env", cwd=repo).returncode == 0
    d = cudaenv(env, "doctor", "--json", cwd=repo)
    finding = next(c for c in json.loads(d.stdout)["checks"] if c["id"] == "host-compiler")
    assert "gcc up to 11.x" in json.dumps(finding), finding
    assert not marker.exists(), marker.read_text()


def _claims_119(path: Path, marker: Path) -> None:
    """A real compiler (Debian's g++-11) that says it is 11.9, as gcc says it: --version,
    -dumpfullversion and its predefined macros. Every run of it leaves a line in `marker`."""
    path.write_text(f"""#!/bin/sh
echo "$0 $*" >> {marker}
case "$1" in
--version) echo "g++-99 (Debian 11.9.0-1) 11.9.0"; exit 0 ;;
-dumpfullversion) echo 11.9.0; exit 0 ;;
-dumpversion) echo 11; exit 0 ;;
esac
exec {GCC11} -U__GNUC_MINOR__ -D__GNUC_MINOR__=9 "$@"
""")
    path.chmod(0o755)


def test_a_compiler_planted_on_path_is_never_chosen_store_wide(tmp_path):
    """A project's bin/ on PATH (direnv's PATH_add) holds a g++-99 that is gcc 11.9 by every
    answer it gives, newer than /usr/bin/g++-11; the user's CXX names it too. rehash and local
    choose /usr/bin/g++-11 and never run the planted one; the choice every later nvcc of the
    store runs names no file of the project."""
    _need_gcc11()
    if gcc_major() <= 11:
        pytest.skip(f"this machine's gcc is {gcc_major()}, which the header's bound 11 accepts")
    marker = tmp_path / "ran"
    proj = tmp_path / "proj"
    (proj / "bin").mkdir(parents=True)
    planted = proj / "bin" / "g++-99"
    _claims_119(planted, marker)
    assert subprocess.run([str(planted), "-dumpfullversion"], capture_output=True, text=True).stdout == "11.9.0\n"
    marker.unlink()
    store_root = tmp_path / "root"
    tk = _toolkit_116(store_root, tmp_path)
    env = host_env(store_root, CXX=str(planted), CUDAHOSTCXX=str(planted))
    env["PATH"] = f"{proj / 'bin'}:/usr/local/bin:/usr/bin:/bin:{CLI_DIR}"
    assert cudaenv(env, "rehash", cwd=proj).returncode == 0
    assert cudaenv(env, "local", "11.6", cwd=proj).returncode == 0
    chosen = (store_root / "host-compiler" / "11.6").read_text()
    assert chosen == f"{tk}\n{GCC11}\n"
    assert str(proj) not in (store_root / "host-compiler" / ".by-root.json").read_text()
    assert not marker.exists(), marker.read_text()
    # The user's own CXX stays theirs in their own shell: cudaenv applies nothing over it.
    out = json.loads(cudaenv(env, "env", "--format", "json", cwd=proj).stdout)
    assert "NVCC_CCBIN" not in out and "CUDAHOSTCXX" not in out, out


@pytest.mark.parametrize("how", ["dir-0777", "dir-of-nobody", "file-0666", "link-in-0777-dir"])
def test_a_compiler_others_can_change_is_never_chosen(tmp_path, how):
    """CUDAENV_HOST_COMPILER_SEARCH names a directory; a compiler there that another user could
    replace (its directory or the file writable by others, or another user's) is not a candidate,
    and the next one is chosen. Another user is uid 65534 (nobody), with a real chown."""
    _need_gcc11()
    if gcc_major() <= 11:
        pytest.skip(f"this machine's gcc is {gcc_major()}, which the header's bound 11 accepts")
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    marker = tmp_path / "ran"
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    if how == "link-in-0777-dir":
        good = tmp_path / "good"
        good.mkdir()
        _claims_119(good / "g++-99", marker)
        os.symlink(good / "g++-99", shared / "g++-99")
    else:
        _claims_119(shared / "g++-99", marker)
    if how in ("dir-0777", "link-in-0777-dir"):
        shared.chmod(0o777)
    elif how == "dir-of-nobody":
        os.chown(shared, 65534, 65534)
    else:
        (shared / "g++-99").chmod(0o777)
    store_root = tmp_path / "root"
    tk = _toolkit_116(store_root, tmp_path)
    env = host_env(store_root, CUDAENV_HOST_COMPILER_SEARCH=f"{shared}:/usr/bin")
    assert cudaenv(env, "rehash").returncode == 0
    assert (store_root / "host-compiler" / "11.6").read_text() == f"{tk}\n{GCC11}\n"
    assert not marker.exists(), marker.read_text()
    # Made safe, the same compiler is the newest accepted one and is chosen.
    shared.chmod(0o755)
    os.chown(shared, 0, 0)
    os.chmod(shared / "g++-99", 0o755)
    assert cudaenv(env, "rehash").returncode == 0
    assert (store_root / "host-compiler" / "11.6").read_text() == f"{tk}\n{shared / 'g++-99'}\n"


TORCH_WHEELS = sorted(Path("/opt/wheels").glob("torch-*.whl")) if Path("/opt/wheels").is_dir() else []


def test_torch_cpp_extension_leaves_nvcc_its_default_unless_cc_is_set():
    """What docs/host-compilers.md says torch honours, read from a real torch wheel's cpp_extension.py
    (a CPU build cannot compile CUDA sources, so its source is what can be checked here): nvcc gets
    `-ccbin $CC` only when CC is set (else nvcc's default, which NVCC_CCBIN sets), and the host
    compiler is CXX, else c++."""
    import zipfile

    if not TORCH_WHEELS:
        pytest.skip("no torch wheel in /opt/wheels to read cpp_extension.py from")
    with zipfile.ZipFile(TORCH_WHEELS[-1]) as z:
        src = z.read("torch/utils/cpp_extension.py").decode()
    assert "compiler = os.environ.get('CXX', 'c++')" in src
    assert re.search(r'_ccbin = os\.getenv\("CC"\)\s+if \(\s+_ccbin is not None', src)
    assert re.search(r'cc_env = os\.getenv\("CC"\)\s+if cc_env is not None:\s+cuda_flags = \[\'-ccbin\', cc_env\]', src)
    assert "NVCC_CCBIN" not in src and "CUDAHOSTCXX" not in src  # nothing of torch's own overrides them


@pytest.mark.network
def test_local_chooses_again_for_a_compiler_installed_since_the_last_rehash(tmp_path):
    """The rehash saw no compatible compiler (only gcc 12 here); g++-11 appears (in a directory
    CUDAENV_HOST_COMPILER_SEARCH names) and `cudaenv local 11.8` stores the choice at once, for the
    hook to apply."""
    _need_gcc11()
    if gcc_major() <= 11:
        pytest.skip(f"this machine's gcc is {gcc_major()}, which 11.8 accepts")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("gcc", "g++", "cc", "c++"):
        os.symlink(shutil.which(name), bindir / name)
    store_root = tmp_path / "root"
    toolkit_with_header(store_root, "11.8.0", nvidia_headers.header("11.8.89"))
    env = host_env(store_root, CUDAENV_HOST_COMPILER_SEARCH=str(bindir))
    env["PATH"] = f"{bindir}:{CLI_DIR}"
    assert cudaenv(env, "rehash").returncode == 0
    assert not (store_root / "host-compiler" / "11.8").exists()
    proj = tmp_path / "proj"
    proj.mkdir()
    os.symlink(GCC11, bindir / "g++-11")  # "apt-get install g++-11"
    r = cudaenv(env, "local", "11.8", cwd=proj)
    assert r.returncode == 0, r.stderr
    assert (store_root / "host-compiler" / "11.8").read_text().splitlines()[1] == str(bindir / "g++-11")


def test_no_module_runs_a_program_by_a_bare_name_or_shutil_which():
    """The one rule for finding a program is programs.which (absolute PATH entries only): no module
    of the package calls shutil.which, and none hands subprocess or os.exec* a program by a bare
    name (a string literal without a `/`, which the kernel's PATH search would find through a
    relative or empty entry), nor takes one as a default argument."""
    import ast

    import cudaenv

    package = Path(cudaenv.__file__).parent
    runners = {"run", "Popen", "check_output", "check_call", "call", "execv", "execvp", "execvpe", "execl",
               "execlp", "spawnvp"}
    offenders = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(package)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "which" and isinstance(node.value, ast.Name) \
                    and node.value.id == "shutil":
                offenders.append(f"{where}:{node.lineno}: shutil.which")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in runners \
                    and node.args:
                first = node.args[0]
                argv0 = first.elts[0] if isinstance(first, (ast.List, ast.Tuple)) and first.elts else first
                if isinstance(argv0, ast.Constant) and isinstance(argv0.value, str) and "/" not in argv0.value:
                    offenders.append(f"{where}:{node.lineno}: runs {argv0.value!r} by its bare name")
            if isinstance(node, ast.FunctionDef):
                for arg, default in zip(node.args.kwonlyargs + node.args.args[::-1],
                                        node.args.kw_defaults + node.args.defaults[::-1]):
                    if arg.arg in ("cpp", "cc", "gcc", "compiler") and isinstance(default, ast.Constant) \
                            and isinstance(default.value, str):
                        offenders.append(f"{where}:{node.lineno}: {arg.arg}={default.value!r} by default")
    assert offenders == []
