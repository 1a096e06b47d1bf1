"""Names that drive a terminal never reach it raw from the CLI.

A store, a project directory, a version file and the arguments given are named with
OSC 52 (clipboard), CSI (clear the screen, colours), BEL, a carriage return, a C1
CSI character and a raw 0x9b byte (the C1 CSI of 8-bit terminals). Every command
that prints a path or echoes what it was given runs as a real subprocess, and its
stdout and stderr must hold none of the characters cudaenv.foundation.terminal
escapes, while JSON stays exact JSON and shell code still sets the exact path.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from cudaenv.foundation import quoting, terminal
from toolkits import rehashed_store

# OSC 52 sets the clipboard, CSI 2J clears the screen; U+009B is the C1 CSI, and the surrogate
# stands for a raw 0x9b byte, which is the CSI of an 8-bit terminal.
EVIL = "esc\x1b]52;c;cHduZWQ=\x07-csi\x1b[2J\x1b[31m-c1\u009b1m-bel\x07-cr\r-raw\udc9b-rtl\u202e"
# A store's path must be UTF-8 (cudaenv writes it into shims as text): its name has all but the raw byte.
EVIL_TEXT = EVIL.replace("\udc9b", "")


def raw_controls(data: bytes) -> list[str]:
    text = data.decode("utf-8", "surrogateescape")
    return sorted({repr(ch) for ch in text if ch in terminal.UNSAFE})


def cli(env, *args, cwd):
    return subprocess.run([sys.executable, "-m", "cudaenv", *args], env=env, cwd=cwd, capture_output=True,
                          timeout=120)


@pytest.fixture
def hostile(tmp_path):
    """A project under a directory named EVIL whose .cuda-version says 13.0, and two stores: `plain`,
    at an ordinary path, with a PATH entry under EVIL (which `env` and `exec` pass on); `evil`, a
    CUDAENV_ROOT under a directory named EVIL_TEXT, which every command refuses in one line."""
    plain = rehashed_store(tmp_path / "plain" / "root")
    plain["HOME"] = str(tmp_path / "home")
    plain["PATH"] = f"{tmp_path / EVIL / 'bin'}:{plain['PATH']}"
    evil_root = tmp_path / EVIL_TEXT / "root"
    evil_root.mkdir(parents=True)
    evil = dict(plain, CUDAENV_ROOT=str(evil_root))
    proj = tmp_path / EVIL / "proj"
    proj.mkdir(parents=True)
    (proj / ".cuda-version").write_text("13.0\n")
    return plain, evil, evil_root, proj


# Every command that prints a path, a version or what it read, run in the project.
PRINTING = [
    ("version",), ("version", "--bare"), ("version-name",), ("version-origin",), ("version-file",),
    ("which", "nvcc"), ("prefix",), ("prefix", "12.8"), ("root",), ("local",), ("global",), ("versions",),
    ("versions", "--bare"), ("versions", "--executables"), ("whence", "nvcc"), ("latest", "13"),
    ("env",), ("env", "--format", "sh"), ("env", "--format", "systemd"), ("env", "--format", "dotenv"),
    ("env", "--shell", "fish"), ("env", "--shell", "zsh"), ("init", "bash"), ("init", "fish"), ("init", "zsh"),
    ("init", "-", "bash"), ("init", "-", "zsh"), ("init", "-", "fish"), ("init", "--path"), ("config",),
    ("rehash",), ("shell", "13.0"), ("exec", "--", "true"), ("doctor",), ("resolve",), ("venv", "show"),
    ("uninstall", "11.8"), ("cache", "list"),
]
JSON = [("version", "--json"), ("versions", "--json"), ("env", "--format", "json"), ("doctor", "--json")]


@pytest.mark.slow  # every command in a subprocess, twice
def test_no_command_prints_a_raw_control_character(hostile):
    plain, evil, evil_root, proj = hostile
    leaks = {}
    for name, env in (("plain", plain), ("evil", evil)):
        for args in PRINTING + JSON:
            p = cli(env, *args, cwd=proj)
            assert b"Traceback" not in p.stderr, (args, p.stderr)
            bad = raw_controls(p.stdout + p.stderr)
            if bad:
                leaks[f"{name}: {' '.join(args)}"] = bad
    assert leaks == {}
    # What names a path shows it escaped: the OSC and CSI stay readable text.
    out = cli(plain, "version-file", cwd=proj).stdout.decode()
    assert out == terminal.escape(str(proj / ".cuda-version")) + "\n"
    assert "\\x1b]52;c;cHduZWQ=\\x07" in out and "\\u009b1m" in out and "\\x0d" in out and "\\x9b" in out


@pytest.mark.slow
def test_errors_about_version_files_and_arguments_print_no_raw_control_character(hostile, tmp_path):
    env, evil, evil_root, proj = hostile
    cases = []
    # A version file whose content holds escapes, and one naming a release that is not installed.
    bad = proj / f"bad{EVIL}"
    bad.mkdir()
    (bad / ".cuda-version").write_text(f"13.0{EVIL_TEXT}\n")
    cases += [(bad, env, args) for args in (("version",), ("which", "nvcc"), ("prefix",), ("env",), ("local",))]
    missing = proj / f"missing{EVIL}"
    missing.mkdir()
    (missing / ".cuda-version").write_text("11.8\n")
    cases += [(missing, env, args) for args in (("version",), ("which", "nvcc"), ("prefix",), ("exec", "--", "true"))]
    # A version file that is a directory, and CUDAENV_VERSION_FILE naming a directory, with no
    # version file above them.
    weird = proj.parent / f"dir{EVIL}"
    (weird / ".cuda-version").mkdir(parents=True)
    cases += [(weird, env, ("version",)), (weird, env, ("local",))]
    gone = dict(env, CUDAENV_VERSION_FILE=str(weird))
    cases += [(weird.parent, gone, ("version",)), (weird.parent, gone, ("global",)), (weird.parent, gone, ("which", "nvcc"))]
    # Arguments and settings holding escapes: a program, a version, a command, an option, the store.
    cases += [(proj, env, ("which", f"nvcc{EVIL}")), (proj, env, ("local", f"13{EVIL}")),
              (proj, env, ("prefix", f"1{EVIL}")), (proj, env, (f"ver{EVIL}",)), (proj, env, ("version", f"--x{EVIL}")),
              (proj, env, ("env", "--format", f"sh{EVIL}")), (proj, env, ("version", "--json", f"--x{EVIL}")),
              (proj, dict(env, CUDAENV_VERSION=f"13{EVIL}"), ("version",)),
              (proj, dict(env, CUDAENV_ROOT=f"relative{EVIL}"), ("version",)),
              (proj, dict(env, CUDAENV_ROOT=str(tmp_path / EVIL)), ("version",))]
    leaks = {}
    for cwd, e, args in cases:
        p = cli(e, *args, cwd=cwd)
        assert b"Traceback" not in p.stderr, (args, p.stderr)
        assert p.returncode != 0 and p.stderr.startswith(b"cudaenv"), (cwd.name, args, p.stdout, p.stderr)
        bad_chars = raw_controls(p.stdout + p.stderr)
        if bad_chars:
            leaks[f"{args}"] = (bad_chars, p.stderr[-300:])
    assert leaks == {}


def test_json_output_stays_exact_json(hostile):
    plain, evil, evil_root, proj = hostile
    v = json.loads(cli(plain, "version", "--json", cwd=proj).stdout)
    assert v["source"] == str(proj / ".cuda-version")
    e = json.loads(cli(plain, "env", "--format", "json", cwd=proj).stdout)
    assert e["PATH"].split(":")[1] == str(proj.parent / "bin")


@pytest.mark.parametrize("shell", ["bash", "dash", "zsh", "fish"])
def test_shell_code_sets_the_exact_path_with_no_raw_control_character(hostile, shell):
    """`env` with PATH holding a directory under EVIL: the code holds no raw control character, and
    the shell reading it gets the path byte for byte (printf's octal escapes; fish's \\x and \\u)."""
    if not shutil.which(shell):
        pytest.skip(f"{shell} is not installed")
    plain, evil, evil_root, proj = hostile
    entry = proj.parent / "bin"
    if shell == "fish":  # fish is a text shell: a PATH entry that is not UTF-8 is refused
        entry = proj.parent.parent / EVIL_TEXT / "bin"
        plain = dict(plain, PATH=f"{entry}:{plain['PATH'].split(':', 1)[1]}")
    code = cli(plain, "env", "--shell", "fish" if shell == "fish" else "sh", cwd=proj).stdout
    assert code and raw_controls(code) == []
    show = b'printf "%s\\n" $PATH' if shell == "fish" else b'printf "%s\\n" "$PATH" | tr : "\\n"'
    r = subprocess.run([shell, "-c", code + b"\n" + show], capture_output=True, cwd=proj)
    assert r.returncode == 0, r.stderr
    assert os.fsencode(str(entry)) in r.stdout.split(b"\n")


def test_shown_keeps_a_path_on_its_messages_line():
    # escape()'s notation, and newline and tab too: the message stays one line.
    assert terminal.shown("/p/a\nb\tc\x1b]52;c;eA==\x07\u009b") == "/p/a\\x0ab\\x09c\\x1b]52;c;eA==\\x07\\u009b"
    # What it shows passes the stream's guard unchanged, and a plain path is itself.
    assert not terminal.unsafe(terminal.shown("/p/a\nb\x1b"))
    assert terminal.shown(os.path.join("/plain", "dir")) == "/plain/dir"


def test_escape_notation():
    assert terminal.escape("a\x1b[2J\x07\r\x7f\u009b\u202e\udc9b\udcff\\x\tb\nc é 中 😀") == \
        "a\\x1b[2J\\x07\\x0d\\x7f\\u009b\\u202e\\x9b\\xff\\x\tb\nc é 中 😀"
    # Quoted output for another program holds nothing the guard would change.
    for value in (EVIL, "/plain/path", "/it's \"q\" $(x)", "/tab\tnew\nline"):
        assert not terminal.unsafe(quoting.sh(value))
        if "\udc9b" not in value:
            assert not terminal.unsafe(quoting.fish(value))


def test_safe_stream_escapes_every_write_and_passes_only_cudaenvs_drawing():
    inner = io.StringIO()
    s = terminal.SafeStream(inner)
    print(f"path {EVIL}", file=s)
    s.control("\r\x1b[K")
    with pytest.raises(ValueError):
        s.control("\x1b]52;c;eA==\x07")
    with pytest.raises(TypeError):
        s.write(b"\x1b")  # type: ignore[arg-type]
    assert inner.getvalue() == f"path {terminal.escape(EVIL)}\n\r\x1b[K"
    assert not hasattr(s, "buffer")


def test_progress_bar_draws_on_a_terminal_with_its_label_escaped(tmp_path):
    """On a real pseudo-terminal the bar still redraws in place (its own \\r ESC[K), and a label
    holding escapes reaches the terminal as text."""
    import pty

    code = ("import sys, time\n"
            "from cudaenv.foundation import terminal, progress\n"
            "terminal.guard_streams()\n"
            f"p = progress.Progress(mode='bar')\n"
            f"p.start({'lbl' + EVIL!r}, total=10)\n"
            "p.advance(5); p._draw(time.monotonic()); p.finish()\n")
    (tmp_path / "bar.py").write_text(code)
    out = bytearray()

    def read(fd):
        data = os.read(fd, 4096)
        out.extend(data)
        return data

    pid_status = pty.spawn([sys.executable, str(tmp_path / "bar.py")], read)
    assert os.waitstatus_to_exitcode(pid_status) == 0, bytes(out)
    assert b"\r\x1b[K" in out
    assert b"lbl" + terminal.escape(EVIL).encode() in out
    assert raw_controls(bytes(out).replace(b"\r\x1b[K", b"").replace(b"\r\n", b"\n")) == []


# A directory a user names, with a newline and a tab in its name.
SPLIT = "line\nbreak\ttab"


def _one_line_naming_split(message: str) -> None:
    assert message.count("\n") == 0 and "line\\x0abreak\\x09tab" in message, message


def test_install_errors_keep_a_users_path_on_one_line(tmp_path, monkeypatch):
    """Paths a user gives the install side (a mirror directory, the download cache, a pins
    file, a CA bundle) stay on their error's one line, with newline and tab written \\x0a and
    \\x09, from the CLI as from the functions that raise them."""
    from httpserver import closed_port

    from cudaenv.installing import download, pins
    from cudaenv.installing.pins import PinsError

    where = tmp_path / SPLIT
    (where / "cache").mkdir(parents=True)
    (where / "cache").chmod(0o777)
    (where / "file").touch()
    env = rehashed_store(tmp_path / "root")
    offline = dict(env, CUDAENV_REDIST_URL=f"http://127.0.0.1:{closed_port()}/")
    runs = [
        (env, ("mirror", "create", str(where / "file"), "13.0")),
        (env, ("mirror", "verify", str(where))),
        (dict(offline, CUDAENV_CACHE_DIR=str(where / "cache")), ("install", "11.8", "--source", "redist")),
    ]
    for e, args in runs:
        p = cli(e, *args, cwd=tmp_path)
        err = p.stderr.decode()
        assert p.returncode != 0 and err.startswith("cudaenv: ") and err.endswith("\n"), (args, err)
        _one_line_naming_split(err[:-1])
    monkeypatch.setenv("CUDAENV_PINS", str(where / "pins.json"))
    with pytest.raises(PinsError) as e:
        pins.load()
    _one_line_naming_split(str(e.value))
    with pytest.raises(download.DownloadError) as e:
        download.ca_bundle({"SSL_CERT_FILE": str(where / "ca.pem")})
    _one_line_naming_split(str(e.value))


def test_venv_bind_names_the_project_the_same_way_each_time(tmp_path):
    """`venv bind` names a project without a .cuda-version twice in its refusal (where none was
    found, and where to run `cudaenv local`); a tab in its name (a newline is refused before)
    is written \\x09 both times, as every path in a one-line message."""
    project = tmp_path / "tab\there"
    project.mkdir()
    p = cli(rehashed_store(tmp_path / "root"), "venv", "bind", "--project", str(project), cwd=tmp_path)
    err = p.stderr.decode()
    assert p.returncode != 0 and err.startswith("cudaenv: no .cuda-version in ") and err.count("\n") == 1, err
    assert "\t" not in err and err.count("tab\\x09here") == 2, err
