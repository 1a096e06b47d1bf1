"""What `cudaenv init` prints for each shell, and the code `cudaenv shell` evaluates.

bash and zsh share shims/select.sh (the shims' own selection code) and
shims/hook.sh; zsh loads them under `emulate sh` so they behave as in dash.
fish has its own implementation in shims/hook.fish. Everything the hook does
per prompt is shell builtins: no Python, no other process.
"""

from __future__ import annotations


from . import store
from .errors import InputError
from . import quoting
from .shims import fill, render_select, template
from .versions import InvalidVersion, parse_spec

SHELLS = ("bash", "zsh", "fish")
RC_FILES = {"bash": "~/.bashrc", "zsh": "~/.zshrc", "fish": "~/.config/fish/config.fish"}


class UnknownShell(InputError, ValueError):
    pass


def check_shell(name: str) -> str:
    if name not in SHELLS:
        raise UnknownShell(f"unknown shell {name!r}; allowed are {', '.join(SHELLS)}")
    return name






def render_init(shell: str) -> str:
    """The code `eval "$(cudaenv init - SHELL)"` (or `| source` in fish) runs."""
    check_shell(shell)
    shims = str(store.shims_dir())
    if shell == "fish":
        text = fill(template("hook.fish"), fish=True)
        text = text.replace("@SHIMS@", quoting.fish(shims))
        return text.replace("@DEFAULT_ROOT@", quoting.fish(str(store.root())))
    q = quoting.sh(shims)
    path_line = (
        f'case ":${{PATH-}}:" in *:{q}:*) ;; *) export PATH={q}"${{PATH:+:$PATH}}" ;; esac\n'
    )
    lib = render_select() + fill(template("hook.sh")).replace("@SHELL@", shell)
    if shell == "zsh":
        # Sticky emulation: functions defined here always run with sh options.
        body = f"emulate sh -c {quoting.sh(lib)}\n" + fill(template("hook.zsh"))
    else:
        body = lib + template("hook.bash")
    return f"# cudaenv init for {shell}\n" + path_line + body


def usage(shell: str) -> str:
    """What `cudaenv init SHELL` (without `-`) tells the user to add to their rc file."""
    check_shell(shell)
    line = "cudaenv init - fish | source" if shell == "fish" else f'eval "$(cudaenv init - {shell})"'
    return (
        f"# Load cudaenv automatically by appending the following to {RC_FILES[shell]}:\n\n"
        f"{line}\n\n"
        "# It puts cudaenv's shims on PATH and sets CUDA_HOME, CUDA_PATH,\n"
        "# CUDAToolkit_ROOT, CUDACXX and PATH as you change directories.\n"
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
