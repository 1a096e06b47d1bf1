"""The one error model (cudaenv/foundation/errors.py) and the one settings table (cudaenv/foundation/settings.py).

Every error a user can meet is a CudaenvError of the kind its exit status says;
the entry point prints it as `cudaenv: <message>` (+ `hint:`); a command module
that cannot be imported is an internal error (70), never a missing command.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cudaenv.foundation import errors, settings

REPO = Path(__file__).resolve().parent.parent


def _classes():
    from cudaenv.installing import deb, download, extract, install, mirror, pins
    from cudaenv.diagnosing import machine, metrics
    from cudaenv.exporting import modulefiles
    from cudaenv.selecting import selection
    from cudaenv.selecting import shared_roots, shell
    from cudaenv.foundation import store, versions
    from cudaenv.installing import system_install
    from cudaenv.foundation import arch
    from cudaenv.installing.sources import base

    return {
        selection.SelectionError: 1, selection.InvalidSelection: 1, selection.NotInstalled: 127,
        install.InstallError: 2, install.BadInput: 1, install.SourceFailure: 2, install.NotInstalled: 127,
        system_install.NotConfirmed: 1,
        base.SourceError: 2, base.Unreachable: 2, base.IntegrityError: 2, base.UnknownRelease: 2,
        base.UnknownComponent: 2, base.SourceUnavailable: 2, download.DownloadError: 2, pins.PinsError: 2,
        extract.UnsafeArchive: 2, extract.ArchiveTooLarge: 2, deb.DebError: 2,
        store.StoreError: 1, store.StoreNotWritable: 1, shared_roots.InvalidSharedRoots: 1,
        machine.ProbeInputError: 1, modulefiles.ModulefileError: 1, metrics.OutputError: 1,
        mirror.MirrorError: 1, versions.InvalidVersion: 1, shell.UnknownShell: 1, shell.PreviousUnset: 1,
        arch.MachineError: 64,
    }


def test_every_error_is_a_cudaenv_error_with_its_documented_status():
    for cls, code in _classes().items():
        assert issubclass(cls, errors.CudaenvError), cls
        e = cls("one line")
        assert e.exit_code == code, cls
        assert code in errors.EXIT_CODES, (cls, code)
        assert str(e) == "one line"


def test_kinds_are_what_a_caller_can_catch():
    from cudaenv.installing import install
    from cudaenv.selecting import selection
    from cudaenv.foundation import store
    from cudaenv.installing.sources import base

    assert issubclass(selection.NotInstalled, errors.NotInstalledError)
    assert issubclass(install.NotInstalled, errors.NotInstalledError)
    assert issubclass(install.BadInput, errors.InputError)
    assert issubclass(base.SourceError, errors.SourceFailureError)
    assert issubclass(store.StoreNotWritable, errors.AccessError)
    # The names callers already catch keep working.
    assert issubclass(install.NotInstalled, install.InstallError)
    from cudaenv.diagnosing import machine
    from cudaenv.foundation import versions

    assert issubclass(machine.ProbeInputError, ValueError) and issubclass(versions.InvalidVersion, ValueError)


def test_report_prints_the_message_and_the_hint(capsys):
    code = errors.report(errors.SourceFailureError("the mirror is gone", hint="set CUDAENV_REDIST_URL"))
    assert code == 2
    assert capsys.readouterr().err == "cudaenv: the mirror is gone\nhint: set CUDAENV_REDIST_URL\n"


# A command module that fails to import, swapped into cli.COMMANDS in a real `cudaenv` process.
_BROKEN = """
import runpy, sys
from cudaenv import cli
cli.COMMANDS["doctor"] = "broken_command:doctor"
sys.argv = ["cudaenv", *sys.argv[1:]]
runpy.run_module("cudaenv", run_name="__main__", alter_sys=True)
"""


@pytest.fixture
def broken(tmp_path):
    (tmp_path / "broken_command.py").write_text("import cudaenv_module_that_does_not_exist  # noqa\n")

    def run(*args, debug):
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CUDAENV_ROOT": str(tmp_path / "root"),
               "PYTHONPATH": f"{REPO}:{tmp_path}", "CUDAENV_DEBUG": debug}
        return subprocess.run([sys.executable, "-c", _BROKEN, *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)

    return run


def test_a_command_that_cannot_import_is_an_internal_error_for_users(broken):
    r = broken("doctor", debug="0")
    assert r.returncode == errors.EX_SOFTWARE == 70
    lines = r.stderr.splitlines()
    assert lines[0] == ("cudaenv: internal error: the 'doctor' command cannot be loaded (ModuleNotFoundError: "
                        "No module named 'cudaenv_module_that_does_not_exist')"), r.stderr
    assert lines[1].startswith("hint: this is a bug in cudaenv") and len(lines) == 2
    assert "Traceback" not in r.stderr and "No such command" not in r.stderr


def test_a_command_that_cannot_import_shows_its_traceback_in_development(broken):
    r = broken("doctor", debug="1")
    assert r.returncode == 70
    assert "Traceback (most recent call last)" in r.stderr and "cudaenv_module_that_does_not_exist" in r.stderr
    assert r.stderr.rstrip().splitlines()[-2].startswith("cudaenv: internal error: the 'doctor' command")


def test_a_command_that_cannot_import_never_vanishes_from_help(broken):
    r = broken("--help", debug="0")
    assert r.returncode == 70 and "the 'doctor' command cannot be loaded" in r.stderr


def test_debug_defaults_to_tracebacks_in_a_git_checkout():
    from cudaenv import cli

    assert cli.debug({"CUDAENV_DEBUG": "1"}) and not cli.debug({"CUDAENV_DEBUG": "0"})
    assert cli.debug({}) == (REPO / ".git").exists() == (Path(cli.__file__).resolve().parents[1] / ".git").exists()


def test_every_command_help_lists_its_exit_codes():
    import click

    from cudaenv import cli

    ctx = click.Context(cli.main, info_name="cudaenv")
    for name in cli.visible_commands():
        command = cli.main.get_command(ctx, name)
        epilog = command.epilog or ""
        assert "Exit codes" in epilog or "Exit status" in epilog or name in ("help",), name
        for code in errors.COMMAND_EXIT_CODES.get(name, ()):
            assert code in errors.EXIT_CODES
    # Appending twice (get_command runs for every --help) must not repeat the paragraph.
    assert cli.main.get_command(ctx, "which").epilog.count("Exit codes") == 1


# --- settings -------------------------------------------------------------------------------

def test_every_variable_the_code_reads_is_in_the_settings_table():
    names = set()
    for path in (REPO / "cudaenv").rglob("*.py"):
        names |= set(re.findall(r"CUDAENV_[A-Z][A-Z_]*[A-Z]", path.read_text()))
    missing = names - set(settings.SETTINGS)
    assert not missing, f"add these to cudaenv/foundation/settings.py: {sorted(missing)}"


def test_settings_read_only_the_environment_they_are_given(monkeypatch):
    monkeypatch.setenv("CUDAENV_DOWNLOAD_JOBS", "9")
    assert settings.number("CUDAENV_DOWNLOAD_JOBS") == 9.0
    assert settings.number("CUDAENV_DOWNLOAD_JOBS", {}) == 4.0
    assert settings.number("CUDAENV_DOWNLOAD_JOBS", {"CUDAENV_DOWNLOAD_JOBS": "many"}) == 4.0
    assert settings.get("CUDAENV_MODULEFILES_FORMAT", {}) == "lmod"
    assert settings.value("CUDAENV_ROOT", {}) is None and settings.value("CUDAENV_ROOT", {"CUDAENV_ROOT": ""}) == ""
    assert settings.flag("CUDAENV_TRUST_MIRROR", {"CUDAENV_TRUST_MIRROR": " Yes "})
    assert not settings.flag("CUDAENV_TRUST_MIRROR", {})
    with pytest.raises(KeyError):
        settings.get("CUDAENV_NOT_A_SETTING", {})


def test_settings_defaults_agree_with_the_code():
    from cudaenv.selecting import discover
    from cudaenv.diagnosing import machine
    from cudaenv.exporting import modulefiles
    from cudaenv.installing.sources import redist

    assert settings.SETTINGS["CUDAENV_REDIST_URL"].default == redist.DEFAULT_URL
    assert settings.SETTINGS["CUDAENV_SYSTEM_SEARCH"].default == discover.DEFAULT_SEARCH
    assert settings.SETTINGS["CUDAENV_PROC_DRIVER_VERSION"].default == machine.PROC_DRIVER
    assert settings.SETTINGS["CUDAENV_MODULEFILES_FORMAT"].default in modulefiles.FORMATS
    from cudaenv.installing import extract

    assert settings.SETTINGS["CUDAENV_MAX_EXPANSION"].default == str(extract.MAX_EXPANSION)


def test_generated_pages_are_current_and_in_the_nav():
    r = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_cli_reference.py"), "--check"],
                       capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    nav = (REPO / "mkdocs.yml").read_text()
    assert "exit-codes.md" in nav and "settings.md" in nav
    text = (REPO / "docs" / "settings.md").read_text()
    for name in settings.SETTINGS:
        assert f"`{name}`" in text
    text = (REPO / "docs" / "exit-codes.md").read_text()
    for code, (name, _) in errors.EXIT_CODES.items():
        assert f"| {code} | {name} |" in text


# -- one error contract for the command line -----------------------------------------------------

def _cli(args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=60)


def _one_error(p):
    """cudaenv's contract: `cudaenv: <message>`, at most one `hint:` line, nothing else."""
    lines = p.stderr.splitlines()
    assert lines and lines[0].startswith("cudaenv: "), p.stderr
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("hint: ")), p.stderr
    assert "Usage:" not in p.stderr and "Try '" not in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("args, message, hint", [
    (["install", "--bogus"], "cudaenv install: no such option --bogus", "`cudaenv install --help` lists the options"),
    (["env", "--format", "foo"], "cudaenv env: invalid value for '--format': 'foo' is not one of", None),
    (["local", "13.0", "13.2"], "cudaenv local: got unexpected extra argument (13.2)", None),
    (["which"], "cudaenv which: missing argument 'COMMAND'", "`cudaenv which --help` shows the usage"),
    (["instal", "13.0"], "no such command 'instal'", "did you mean install? `cudaenv commands` lists them"),
    (["help", "instal"], "no such command 'instal'", "did you mean install? `cudaenv commands` lists them"),
    (["nosuch"], "no such command 'nosuch'", "`cudaenv commands` lists them"),
    (["cache", "prune", "--olderthan", "3d"], "cudaenv cache prune: no such option --olderthan",
     "did you mean --older-than? `cudaenv cache prune --help` lists the options"),
    (["--bogus"], "cudaenv: no such option --bogus", None),
])
def test_usage_errors_are_one_line_and_64(tmp_path, args, message, hint):
    """A typo is never mistaken for an outage (2) or bad input (1), and says what was meant."""
    p = _cli(args, cwd=tmp_path)
    assert p.returncode == errors.EX_USAGE == 64, p.stderr
    _one_error(p)
    assert p.stderr.splitlines()[0].startswith(f"cudaenv: {message}"), p.stderr
    if hint:
        assert p.stderr.splitlines()[1] == f"hint: {hint}"
    assert p.stdout == ""


@pytest.mark.parametrize("args", [["install", "13.0", "--source", "redist"], ["install", "13.0", "--source", "apt"],
                                  ["resolve"], ["doctor"]])
def test_a_machine_variable_of_another_cpu_is_one_line_and_64(tmp_path, args):
    """CUDAENV_MACHINE (uname -m for tests) takes x86_64 or aarch64 (amd64, arm64): anything
    else stops every command that asks it before it does anything, as a bad option does."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CUDAENV_ROOT": str(tmp_path / "root"),
           "PYTHONPATH": str(REPO), "CUDAENV_MACHINE": "ppc64le"}
    p = _cli(args, env=env, cwd=tmp_path)
    assert p.returncode == errors.EX_USAGE == 64, p.stderr
    _one_error(p)
    assert p.stderr == "cudaenv: invalid CUDAENV_MACHINE 'ppc64le': allowed are x86_64, aarch64, amd64, arm64\n"
    assert not (tmp_path / "root" / "versions").exists()


def _every_command(group, path):
    import click

    ctx = click.Context(group, info_name=path[-1] if path else "cudaenv")
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        yield path + [name], cmd
        if isinstance(cmd, click.Group):
            yield from _every_command(cmd, path + [name])


def test_every_command_answers_an_unknown_option_with_64(tmp_path):
    """The whole CLI surface, walked from the command table: no command keeps click's 3-line block."""
    from cudaenv import cli

    # Their words are another command line (exec's command, completions' partial command line).
    passthrough = {("exec",), ("completions",)}
    walked = list(_every_command(cli.main, []))
    assert len(walked) > 25 and passthrough <= {tuple(p) for p, _ in walked}
    for path, _ in walked:
        if tuple(path) in passthrough:
            continue
        p = _cli([*path, "--no-such-option-at-all"], cwd=tmp_path)
        assert p.returncode == 64, (path, p.returncode, p.stderr)
        _one_error(p)
        assert p.stderr.splitlines()[0] == f"cudaenv: cudaenv {' '.join(path)}: no such option --no-such-option-at-all"


def test_a_usage_error_with_json_is_also_a_json_object(tmp_path):
    import json

    p = _cli(["install", "13.0", "--json", "--bogus"], cwd=tmp_path)
    assert p.returncode == 64
    assert json.loads(p.stdout) == {"schema": "cudaenv.error/1", "status": "usage", "exit_code": 64,
                                    "error": "cudaenv install: no such option --bogus",
                                    "hint": "`cudaenv install --help` lists the options"}


def test_generated_reference_does_not_depend_on_the_terminal(tmp_path):
    """The reference is rendered 80 columns wide whatever terminal or COLUMNS the generator runs in."""
    for columns in ("40", "300"):
        r = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_cli_reference.py"), "--check"],
                           capture_output=True, text=True, cwd=REPO, env=dict(os.environ, COLUMNS=columns))
        assert r.returncode == 0, (columns, r.stderr)
