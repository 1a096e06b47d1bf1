"""What `cudaenv init` prints for each shell, and the code `cudaenv shell` evaluates.

bash and zsh share shims/select.sh (the shims' own selection code) and
shims/hook.sh; zsh loads them under `emulate sh` so they behave as in dash.
fish has its own implementation in shims/hook.fish. Everything the hook does
per prompt is shell builtins: no Python, no other process.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..foundation import ownership, quoting, store
from ..foundation.errors import InputError
from .shims import SH_CR, fill, render_select, template
from ..foundation.versions import InvalidVersion, parse_spec

SHELLS = ("bash", "zsh", "fish")
RC_FILES = {"bash": "~/.bashrc", "zsh": "~/.zshrc", "fish": "~/.config/fish/config.fish"}


class UnknownShell(InputError, ValueError):
    pass


def check_shell(name: str) -> str:
    if name not in SHELLS:
        raise UnknownShell(f"unknown shell {name!r}; allowed are {', '.join(SHELLS)}")
    return name






def program() -> str:
    """The path the shell function runs cudaenv by.

    The `cudaenv` on PATH now (a wrapper the user put first stays first), else the console
    script beside this interpreter (a venv's, pipx's or uv's bin/); by its absolute path, so a
    shell where that venv is not active still finds it. Else the name."""
    from ..foundation.programs import which

    found = which("cudaenv")
    if found:
        return str(found)
    beside = Path(sys.executable).parent / "cudaenv"
    return str(beside) if os.access(beside, os.X_OK) and beside.is_file() else "cudaenv"


def render_init(shell: str) -> str:
    """The code `eval "$(cudaenv init - SHELL)"` (or `| source` in fish) runs."""
    check_shell(shell)
    shims = str(store.shims_dir())
    if shell == "fish":
        text = fill(template("hook.fish"), fish=True)
        text = text.replace("@SHIMS@", quoting.fish(shims)).replace("@CUDAENV@", quoting.fish(program()))
        return text.replace("@DEFAULT_ROOT@", quoting.fish(str(store.root())))
    q = quoting.sh(shims)
    path_line = (
        f'case ":${{PATH-}}:" in *:{q}:*) ;; *) export PATH={q}"${{PATH:+:$PATH}}" ;; esac\n'
    )
    lib = render_select() + fill(template("hook.sh")).replace("@SHELL@", shell).replace("@CUDAENV@",
                                                                                        quoting.sh(program()))
    # The selection's carriage return, written as bash's and zsh's $'\r': the printed code
    # holds no control character (the CLI escapes any it prints, foundation/terminal.py).
    lib = lib.replace(SH_CR, "$'\\r'")
    if shell == "zsh":
        # Sticky emulation: functions defined here always run with sh options.
        body = f"emulate sh -c {quoting.sh(lib)}\n" + fill(template("hook.zsh"))
    else:
        body = lib + template("hook.bash")
    return f"# cudaenv init for {shell}\n" + path_line + body


# -- the init file: a shell start that runs no Python ---------------------------------------------
#
# `eval "$(cudaenv init - bash)"` starts Python at every shell start. The rc line below
# instead sources what that command printed last time, kept in the user's state directory,
# and falls back to the command (which writes the file again) when the file is missing or
# stale. The file checks itself with builtins only: the settings the rendering read are
# unchanged, and no file it was rendered from is newer than it (an upgrade, a reinstall, an
# edited checkout) or gone (an uninstall, after which the rc line prints nothing).

# The completion script of each shell, which the init file loads with the hook
# (cudaenv/completion.py writes the line that loads it).
COMPLETION_SCRIPT = {"bash": "cudaenv.bash", "zsh": "_cudaenv", "fish": "cudaenv.fish"}


def completion_dir() -> Path:
    """The directory holding the completion scripts, installed or in a checkout."""
    try:
        from importlib.resources import files

        path = Path(str(files("cudaenv.completions")))
        if (path / COMPLETION_SCRIPT["bash"]).is_file():
            return path
    except (ImportError, ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent.parent / "completions"


INIT_DIR_SH = '"${XDG_STATE_HOME:-$HOME/.local/state}/cudaenv"'
INIT_DIR_FISH = '(set -q XDG_STATE_HOME; and echo $XDG_STATE_HOME; or echo $HOME/.local/state)/cudaenv'
# What store.root() and so every path in the rendering depends on.
INIT_SETTINGS = ("CUDAENV_ROOT", "XDG_DATA_HOME", "HOME")


def init_file(shell: str, env=None) -> Path:
    """Where the rendered init for `shell` is kept: the rc line's rule, in Python."""
    env = os.environ if env is None else env
    state = env.get("XDG_STATE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "state")
    return Path(state) / "cudaenv" / f"init.{check_shell(shell)}"


def rc_line(shell: str) -> str:
    """The one line a user puts in their rc file: no Python at shell start, silent once uninstalled.

    Its fallback runs cudaenv by the path it is installed at (a venv need not be active in
    the new shell), and tests that the program is there first: a removed cudaenv prints nothing."""
    check_shell(shell)
    prog = program()
    if shell == "fish":
        q = quoting.fish(prog) if os.path.isabs(prog) else prog
        exists = f"test -x {q}" if os.path.isabs(prog) else "type -q cudaenv"
        return (f"set -l f {INIT_DIR_FISH}/init.fish; test -r $f; and source $f; "
                f"or begin; {exists}; and {q} init - fish | source; end")
    q = quoting.sh(prog)
    exists = f"[ -x {q} ]" if os.path.isabs(prog) else "command -v cudaenv >/dev/null"
    f = f'{INIT_DIR_SH[:-1]}/init.{shell}"'
    return f'if [ -r {f} ] && . {f}; then :; elif {exists}; then eval "$({q} init - {shell})"; fi'


def _init_sources(shell: str) -> list[Path]:
    """The files a rendering is made from; one newer than the init file, or gone, makes it stale."""
    from .shims import template_dir

    here = Path(__file__).resolve().parent
    package = here.parent
    sources = [Path(str(template_dir() / name)) for name in ("select.sh", "hook.sh", "hook.bash", "hook.zsh",
                                                               "hook.fish")]
    sources += [completion_dir() / COMPLETION_SCRIPT[shell], package / "__init__.py", here / "shell.py",
                here / "shims.py", Path(program()) if os.path.isabs(program()) else package / "__main__.py"]
    return sources


def _guard(shell: str, path: Path) -> str:
    sources = _init_sources(shell)
    if shell == "fish":
        q = quoting.fish
        same = "; and ".join(f'test "${name}" = {q(os.environ.get(name, ""))}' for name in INIT_SETTINGS)
        return (f"{same}; or return 1\n"
                f"for f in {' '.join(q(str(s)) for s in sources)}\n"
                f"    test -e $f; and not test $f -nt {q(str(path))}; or return 1\n"
                "end\n")
    same = " && ".join(f'[ "${{{name}-}}" = {quoting.sh(os.environ.get(name, ""))} ]' for name in INIT_SETTINGS)
    return (f"{same} || return 1\n"
            f"for _cudaenv_f in {' '.join(quoting.sh(str(s)) for s in sources)}; do\n"
            f'    [ -e "$_cudaenv_f" ] && ! [ "$_cudaenv_f" -nt {quoting.sh(str(path))} ] || '
            "{ unset _cudaenv_f; return 1; }\n"
            "done\nunset _cudaenv_f\n")


def write_init_file(shell: str, text: str) -> Path | None:
    """Keep `text` (what `init - shell` prints) where the rc line sources it; None if it cannot be.

    Written only when it changed, atomically, readable by the user alone. A state directory
    this user cannot write leaves the rc line on its fallback, which still works."""
    path = init_file(shell)
    body = (f"# cudaenv init for {shell}, written by `cudaenv init - {shell}` for the line in "
            f"{RC_FILES[shell]}; do not edit\n" + _guard(shell, path) + text + "return 0\n")
    try:
        if path.is_file() and not path.is_symlink() and path.read_text() == body:
            # Same text, but a source is newer (an upgrade that changed nothing here):
            # without a new mtime every shell start would fall back to Python.
            os.utime(path)
            return path
        # Its parents ($HOME, ~/.local, ~/.local/state) 0755 and it 0700, whatever the umask.
        ownership.make_dirs(path.parent, leaf=0o700)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(body)
        os.replace(tmp, path)
        return path
    except OSError:
        return None


def usage(shell: str) -> str:
    """What `cudaenv init SHELL` (without `-`) tells the user to add to their rc file."""
    check_shell(shell)
    mkdir = "mkdir -p ~/.config/fish  # if it does not exist yet\n" if shell == "fish" else ""
    return (
        f"# Load cudaenv automatically by appending the following line to {RC_FILES[shell]}:\n\n"
        f"{rc_line(shell)}\n\n"
        "# It puts cudaenv's shims on PATH and sets CUDA_HOME, CUDA_PATH,\n"
        "# CUDAToolkit_ROOT, CUDACXX and PATH as you change directories. It runs\n"
        "# no Python at shell start, and prints nothing once cudaenv is removed.\n"
        "# For example:\n\n"
        f"{mkdir}echo {quoting.sh(rc_line(shell))} >> {RC_FILES[shell]}\n"
    )


OLD_VAR = "CUDAENV_VERSION_OLD"  # what `cudaenv shell -` goes back to, as pyenv's PYENV_VERSION_OLD


def _set(shell: str, name: str, value: str) -> str:
    if shell == "fish":
        return f"set -gx {name} {quoting.fish(value)}\n"
    return f"export {name}={quoting.sh(value)}\n"


def _unset(shell: str, name: str) -> str:
    return f"set -e {name}\n" if shell == "fish" else f"unset {name}\n"


def sh_shell(shell: str, version: str | None, unset: bool, current: str | None,
             old: str | None = None) -> str:
    """Code that sets or clears CUDAENV_VERSION in the calling shell. Raises
    InvalidVersion for a bad value; every value is validated before it is quoted.

    Each change remembers the value it replaced in CUDAENV_VERSION_OLD (empty:
    there was none), so `cudaenv shell -` swaps back, as pyenv's does."""
    check_shell(shell)
    current = (current or "").strip(" \t")
    if current:
        parse_spec(current)  # never copy an invalid value into another variable
    remember = _set(shell, OLD_VAR, current)
    if unset:
        return remember + _unset(shell, "CUDAENV_VERSION")
    if version is None:
        return f"echo {parse_spec(current).text}\n"
    if version == "-":
        if old is None:
            raise PreviousUnset(f"{OLD_VAR} is not set: there is no previous shell version to return to")
        previous = old.strip(" \t")
        if not previous:
            return remember + _unset(shell, "CUDAENV_VERSION")
        version = previous
    spec = parse_spec(version.strip(" \t"))
    return remember + _set(shell, "CUDAENV_VERSION", spec.text)


class PreviousUnset(InputError, ValueError):
    """`cudaenv shell -` with no earlier `cudaenv shell` in this shell."""


__all__ = ["SHELLS", "UnknownShell", "InvalidVersion", "PreviousUnset", "check_shell", "render_init", "usage",
           "sh_shell"]
