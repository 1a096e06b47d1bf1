"""`cudaenv modulefiles` loaded by the real tools: Debian's Lmod (lua) and Environment
Modules (Tcl, modulecmd.tcl), in a clean bash, on stub toolkits from tests/toolkits.py.

Debian's lmod and environment-modules packages conflict, so CI installs lmod and unpacks
environment-modules with dpkg-deb -x (see .ci/run); CUDAENV_TEST_MODULECMD_TCL names its
modulecmd.tcl when it is not in one of the usual places.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolkits import base_env, make_toolkit, managed

LMOD_INIT = Path("/usr/share/lmod/lmod/init/bash")
MODULECMD_CANDIDATES = (
    os.environ.get("CUDAENV_TEST_MODULECMD_TCL", ""),
    "/usr/lib/x86_64-linux-gnu/modulecmd.tcl",
    "/usr/share/modules/libexec/modulecmd.tcl",
    "/opt/environment-modules/usr/lib/x86_64-linux-gnu/modulecmd.tcl",
)


def _modulecmd_tcl() -> str | None:
    return next((p for p in MODULECMD_CANDIDATES if p and os.path.isfile(p)), None)


def module_prelude(fmt: str) -> str:
    """bash lines that define `module` with the real tool for this format, or skip."""
    if fmt == "lmod":
        if not LMOD_INIT.is_file():
            pytest.skip(f"Lmod is not installed ({LMOD_INIT} missing; apt-get install lmod)")
        return f"source {LMOD_INIT}\n"
    tcl = _modulecmd_tcl()
    tclsh = shutil.which("tclsh8.6") or shutil.which("tclsh")
    if not (tcl and tclsh):
        pytest.skip("Environment Modules' modulecmd.tcl or tclsh is missing (see .ci/run: "
                    "dpkg-deb -x environment-modules, apt-get install tcl8.6)")
    # What Debian's init/bash defines, minus its autoinit of system-wide module paths.
    return f'module() {{ eval "$({tclsh} {tcl} bash "$@")"; }}\n'


class Site:
    """A store with managed 12.8.1 and 13.0.2, a discovered 12.6.0, and `cudaenv global 13.0`."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.root = tmp / "cudaenv-root"
        self.tk = {r: managed(self.root, r) for r in ("12.8.1", "13.0.2")}
        self.tk["12.6.0"] = make_toolkit(tmp / "sys" / "cuda-12.6", "12.6.0")
        self.env = base_env(self.root, search=str(tmp / "sys" / "cuda-*"))
        self.env["MODULEPATH"] = ""
        # Lmod drops duplicate PATH entries whenever it prepends; start from a PATH without any
        # so that "purge restores PATH" compares like with like.
        self.env["PATH"] = ":".join(dict.fromkeys(self.env["PATH"].split(":")))
        for var in ("LOADEDMODULES", "_LMFILES_", "LMOD_CMD", "MODULESHOME"):
            self.env.pop(var, None)
        self.mf = tmp / "modulefiles"
        self.cli("global", "13.0")

    def cli(self, *args, check=True, env=None):
        r = subprocess.run([sys.executable, "-m", "cudaenv", *args], capture_output=True, text=True,
                           env=env or self.env, cwd=self.tmp)
        if check:
            assert r.returncode == 0, r.stdout + r.stderr
        return r

    def shell(self, fmt: str, script: str) -> dict:
        """Run `script` after `module use`; each `snap NAME` records the environment as JSON."""
        snap = ('snap() { printf \'%s\\t%s\\t%s\\t%s\\t%s\\n\' "$1" "$(command -v nvcc || echo none)" '
                '"${CUDA_HOME-unset}" "${CUDAToolkit_ROOT-unset}" "$PATH"; }\n')
        full = module_prelude(fmt) + snap + "snap before\n" + f"module use {self.mf}\n" + script
        r = subprocess.run(["bash", "--norc", "--noprofile", "-c", full], capture_output=True, text=True,
                           env=self.env, cwd=self.tmp)
        rows = {}
        for line in r.stdout.splitlines():
            name, nvcc, home, tkroot, path = line.split("\t")
            rows[name] = {"nvcc": nvcc, "home": home, "tkroot": tkroot, "path": path}
        rows["stderr"] = r.stderr
        return rows


@pytest.fixture
def site(tmp_path):
    return Site(tmp_path)


@pytest.mark.parametrize("fmt", ["lmod", "tcl"])
def test_load_swap_purge_with_the_real_tool(site, fmt):
    site.cli("modulefiles", str(site.mf), "--format", fmt)
    rows = site.shell(fmt, "module load cuda/13.0\nsnap loaded\n"
                           "module swap cuda/12.8\nsnap swapped\n"
                           "module purge\nsnap purged\n"
                           "module load cuda\nsnap default\n"
                           "module purge\nmodule load cuda/12.6.0\nsnap discovered\n")
    tk = {r: str(p) for r, p in site.tk.items()}
    assert rows["loaded"]["nvcc"] == f"{tk['13.0.2']}/bin/nvcc", rows["stderr"]
    assert rows["loaded"]["home"] == rows["loaded"]["tkroot"] == tk["13.0.2"]
    assert rows["loaded"]["path"].startswith(f"{tk['13.0.2']}/bin:")
    assert rows["swapped"]["nvcc"] == f"{tk['12.8.1']}/bin/nvcc"
    assert rows["swapped"]["home"] == tk["12.8.1"]
    assert tk["13.0.2"] not in rows["swapped"]["path"]  # switched cleanly: the old bin is gone
    assert rows["purged"] == rows["before"]
    assert rows["purged"]["home"] == "unset"
    assert rows["default"]["home"] == tk["13.0.2"]  # the global selection
    assert rows["discovered"]["home"] == tk["12.6.0"]


@pytest.mark.parametrize("setting", [None, "0"])
@pytest.mark.parametrize("fmt", ["lmod", "tcl"])
def test_a_module_puts_lib64_on_ld_library_path_as_activation_does(site, fmt, setting):
    """A loaded module gives a library search (cuda-pathfinder asks the loader before CUDA_PATH)
    the toolkit's lib64, as the hook and `cudaenv exec` do; unload takes it away again, and
    modulefiles written with CUDAENV_LD_LIBRARY_PATH=0 leave LD_LIBRARY_PATH alone."""
    env = dict(site.env, CUDAENV_LD_LIBRARY_PATH=setting) if setting else site.env
    site.cli("modulefiles", str(site.mf), "--format", fmt, env=env)
    script = (module_prelude(fmt) + f"module use {site.mf}\n" + 'echo "before=${LD_LIBRARY_PATH-unset}"\n'
              "module load cuda/13.0\n" + 'echo "loaded=${LD_LIBRARY_PATH-unset}"\n'
              "module unload cuda\n" + 'echo "unloaded=${LD_LIBRARY_PATH-unset}"\n')
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True,
                       env=dict(site.env, LD_LIBRARY_PATH="/opt/own/lib"), cwd=site.tmp)
    got = dict(line.split("=", 1) for line in r.stdout.splitlines())
    lib = str(site.tk["13.0.2"] / "lib64")
    assert got["before"] == got["unloaded"] == "/opt/own/lib", (got, r.stderr)
    assert got["loaded"] == ("/opt/own/lib" if setting == "0" else f"{lib}:/opt/own/lib"), (got, r.stderr)
    from cudaenv.selecting import activation

    assert activation.toolkit_env(site.tk["13.0.2"], dict(site.env, LD_LIBRARY_PATH="/opt/own/lib", **(
        {"CUDAENV_LD_LIBRARY_PATH": setting} if setting else {}))).get("LD_LIBRARY_PATH", "/opt/own/lib") \
        == got["loaded"]


@pytest.mark.parametrize("fmt", ["lmod", "tcl"])
def test_only_one_cuda_at_a_time(site, fmt):
    site.cli("modulefiles", str(site.mf), "--format", fmt)
    rows = site.shell(fmt, "module load cuda/13.0.2\nmodule load cuda/12.8.1\nsnap second\n")
    # Lmod's family() swaps the first out; Environment Modules' conflict refuses the second.
    expected = "12.8.1" if fmt == "lmod" else "13.0.2"
    assert rows["second"]["home"] == str(site.tk[expected]), rows["stderr"]
    added = [p for p in rows["second"]["path"].split(":") if p not in rows["before"]["path"].split(":")]
    assert added == [f"{site.tk[expected]}/bin"]
    if fmt == "tcl":
        assert "conflict" in rows["stderr"].lower()


@pytest.mark.parametrize("fmt", ["lmod", "tcl"])
def test_odd_toolkit_path_is_quoted(site, fmt):
    odd = make_toolkit(site.tmp / 'sys/cuda-13.1 $HOME [x] "q" \\b', "13.1.0")
    site.cli("modulefiles", str(site.mf), "--format", fmt)
    rows = site.shell(fmt, "module load cuda/13.1\nsnap odd\n")
    assert rows["odd"]["home"] == str(odd), rows["stderr"]
    assert rows["odd"]["nvcc"] == f"{odd}/bin/nvcc"


def test_regenerate_keeps_current_and_leaves_foreign_files(site):
    family = site.mf / "cuda"
    site.cli("modulefiles", str(site.mf))
    assert sorted(os.listdir(family)) == [".modulerc.lua", "12.6.0.lua", "12.8.1.lua", "13.0.2.lua"]
    (family / "11.4.lua").write_text('-- an admin\'s own modulefile\nsetenv("CUDA_HOME", "/opt/cuda-11.4")\n')
    r = site.cli("modulefiles", str(site.mf))
    assert r.stdout.startswith(f"{family}: up to date"), r.stdout
    shutil.rmtree(site.tk["12.8.1"])
    r = site.cli("modulefiles", str(site.mf))
    assert f"removed {family / '12.8.1.lua'}" in r.stdout
    assert (family / "11.4.lua").exists()
    assert 'module_version("cuda/12.8.1"' not in (family / ".modulerc.lua").read_text()
    # Switching format replaces our files and still keeps the admin's.
    site.cli("modulefiles", str(site.mf), "--format", "tcl")
    assert sorted(os.listdir(family)) == [".modulerc", "11.4.lua", "12.6.0", "13.0.2"]
    assert (family / "13.0.2").read_text().startswith("#%Module")


def test_refresh_if_configured(site):
    from cudaenv.exporting import modulefiles

    env = dict(site.env)
    old = {k: os.environ.get(k) for k in ("CUDAENV_ROOT", "CUDAENV_SYSTEM_SEARCH", "CUDAENV_CACHE_DIR")}
    os.environ.update({k: env[k] for k in old})
    try:
        assert modulefiles.refresh_if_configured(env) is None  # nothing configured: nothing done
        env[modulefiles.DIR_VAR] = str(site.mf)
        assert modulefiles.refresh_if_configured(env) == f"modulefiles updated in {site.mf / 'cuda'}"
        assert (site.mf / "cuda" / "13.0.2.lua").is_file()
        managed(site.root, "13.1.0")  # as `cudaenv install 13.1` leaves it
        assert modulefiles.refresh_if_configured(env) is not None
        assert (site.mf / "cuda" / "13.1.0.lua").is_file()
        assert modulefiles.refresh_if_configured(env) is None  # nothing changed
        env[modulefiles.FORMAT_VAR] = "rpm"
        msg = modulefiles.refresh_if_configured(env)
        assert msg.startswith("modulefiles not updated: invalid modulefile format 'rpm'")
        env[modulefiles.FORMAT_VAR], env[modulefiles.DIR_VAR] = "tcl", "relative/dir"
        assert "must be an absolute path" in modulefiles.refresh_if_configured(env)
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


@pytest.mark.parametrize("args, why", [
    ((), "no DIR given and CUDAENV_MODULEFILES_DIR is not set"),
    (("{file}",), "not a directory"),
])
def test_bad_input_is_one_line(site, args, why):
    afile = site.tmp / "afile"
    afile.write_text("x")
    r = site.cli("modulefiles", *(a.format(file=afile) for a in args), check=False)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("cudaenv: ") and why in r.stderr and len(r.stderr.splitlines()) == 1


def test_directory_from_environment(site):
    env = {**site.env, "CUDAENV_MODULEFILES_DIR": str(site.mf), "CUDAENV_MODULEFILES_FORMAT": "tcl"}
    r = site.cli("modulefiles", env=env)
    assert "default: cuda/13.0.2" in r.stdout
    assert (site.mf / "cuda" / ".modulerc").read_text().count("module-version cuda/13.0.2 default") == 1


@pytest.mark.parametrize("fmt", ["lmod", "tcl"])
def test_host_compiler_rehash_chose_is_loaded_and_unloaded(site, fmt):
    """11.8 refuses this machine's gcc 12 (the table, read from its real header): the modulefile sets the
    g++-11 rehash chose, takes it away on purge, and leaves a CXX the user set alone."""
    gcc11 = shutil.which("g++-11", path="/usr/bin")
    gcc = subprocess.run(["gcc", "-dumpversion"], capture_output=True, text=True).stdout.split(".")[0]
    if not gcc11 or int(gcc) <= 11:
        pytest.skip(f"needs /usr/bin/g++-11 and a default gcc above 11 (gcc is {gcc})")
    managed(site.root, "11.8.0")
    site.env["PATH"] = f"/usr/bin:/bin:{site.env['PATH']}"
    site.cli("rehash")
    site.cli("modulefiles", str(site.mf), "--format", fmt)
    script = (module_prelude(fmt) + f"module use {site.mf}\nmodule load cuda/11.8\necho \"a=$NVCC_CCBIN|$CUDAHOSTCXX\"\n"
              "module purge\necho \"b=${NVCC_CCBIN-unset}\"\nexport CXX=g++-12\nmodule load cuda/11.8\n"
              "echo \"c=${NVCC_CCBIN-unset}\"\nmodule load cuda/13.0\necho \"d=${NVCC_CCBIN-unset}\"\n")
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True,
                       env=site.env, cwd=site.tmp)
    cc = (site.root / "host-compiler" / "11.8").read_text().splitlines()[1]
    assert os.path.realpath(cc) == os.path.realpath(gcc11)
    assert f"a={cc}|{cc}" in r.stdout, r.stdout + r.stderr
    assert "b=unset" in r.stdout and "c=unset" in r.stdout and "d=unset" in r.stdout, r.stdout + r.stderr


# -- the directories written into: nobody else's, whatever the umask ------------------------------

def _cli_with_umask(site, mask: int, *args):
    """The real CLI under a real umask (set by the shell that starts it)."""
    return subprocess.run(["sh", "-c", f'umask {mask:03o}; exec "$0" -m cudaenv "$@"', sys.executable, *args],
                          capture_output=True, text=True, env=site.env, cwd=site.tmp)


def _writable_by_others(top: Path) -> list[str]:
    found = []
    for d, dirs, files in os.walk(top):
        for p in [d] + [os.path.join(d, n) for n in files]:
            if os.lstat(p).st_mode & 0o022:
                found.append(f"{p} {oct(os.lstat(p).st_mode)}")
    return found


@pytest.mark.parametrize("mask", [0o000, 0o002])
@pytest.mark.parametrize("fmt", ["lmod", "tcl"])
def test_modulefiles_are_written_with_modes_the_umask_cannot_open(site, mask, fmt):
    """Under umask 000 or 002 the tree cudaenv makes (DIR, its missing parents, cuda/, every
    file) is writable by its owner alone."""
    top = site.tmp / "made" / "by" / "us"
    r = _cli_with_umask(site, mask, "modulefiles", str(top), "--format", fmt)
    assert r.returncode == 0, r.stderr
    assert (top / "cuda" / ("13.0.2.lua" if fmt == "lmod" else "13.0.2")).is_file()
    assert _writable_by_others(site.tmp / "made") == []


@pytest.mark.parametrize("case", ["cuda-of-nobody-in-sticky", "cuda-0777", "dir-0777", "parent-of-nobody"])
def test_modulefiles_are_never_written_into_a_directory_others_can_write(site, case):
    """Another user (nobody, a real chown) made an 0777 cuda/ in a sticky world-writable directory,
    or the directory is writable by others: one line naming it, exit 1, nothing written there."""
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    sticky = site.tmp / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    top = sticky / "mf"
    top.mkdir()
    cuda = top / "cuda"
    if case == "cuda-of-nobody-in-sticky":
        top.chmod(0o1777)
        cuda.mkdir()
        os.chown(cuda, 65534, 65534)
        cuda.chmod(0o777)
        bad = f"{cuda} belongs to uid 65534"
    elif case == "cuda-0777":
        cuda.mkdir()
        cuda.chmod(0o777)
        bad = f"{cuda} is writable by others (mode 0777)"
    elif case == "dir-0777":
        top.chmod(0o777)
        bad = f"{top} is writable by others (mode 0777)"
    else:
        os.chown(top, 65534, 65534)
        bad = f"{top} belongs to uid 65534"
    r = site.cli("modulefiles", str(top), check=False)
    assert r.returncode == 1 and r.stdout == "", r.stdout
    assert r.stderr == (f"cudaenv: refusing to write modulefiles into {cuda}: {bad}; it and every directory above "
                        "it must belong to you or root and be writable only by their owner\n")
    if case.startswith("cuda-"):
        assert list(cuda.iterdir()) == []
    else:
        assert not cuda.exists()  # nothing is made where it would be refused
