"""Tab completion: where the shipped scripts live, the line `init -` adds to load
them, and the candidates `cudaenv completions CMD` lists (pyenv's protocol).

The scripts in completions/ complete versions and program names with globs over
the store, so a <Tab> starts no Python; `cudaenv completions` is the same
answer for other tools and for scripts.
"""

from __future__ import annotations


from .foundation import quoting

# The formats and shells offered by the commands that take them, named once here
# so the scripts and `cudaenv completions` agree (tests/test_parity.py checks).
ENV_FORMATS = ("sh", "systemd", "dotenv", "json")
SHELLS = ("bash", "zsh", "fish")

# Commands whose first argument is a version spec.
TAKES_VERSION = ("local", "global", "shell", "prefix", "uninstall", "install", "env", "latest")


def init_line(shell: str) -> str:
    """The code `init - SHELL` appends so the completions load with the hook."""
    from .selecting.shell import COMPLETION_SCRIPT, completion_dir

    d = completion_dir()
    if shell == "fish":
        q = quoting.fish(str(d / COMPLETION_SCRIPT["fish"]))
        return f"test -r {q}; and source {q}\n"
    if shell == "zsh":
        # The script is a #compdef function: put it on fpath for compinit, and
        # register it now when compinit already ran.
        q = quoting.sh(str(d))
        return (f"fpath=({q} $fpath)\n"
                "if (( $+functions[compdef] )); then autoload -Uz _cudaenv && compdef _cudaenv cudaenv; fi\n")
    q = quoting.sh(str(d / COMPLETION_SCRIPT["bash"]))
    return f"[ -r {q} ] && . {q}\n"


def _options(name: str) -> list[str]:
    import click

    from .cli import main

    ctx = click.Context(main, info_name="cudaenv")
    cmd = main.get_command(ctx, name)
    if cmd is None:
        return []
    opts: list[str] = []
    for p in cmd.params:
        if isinstance(p, click.Option):
            opts.extend(o for o in p.opts if o.startswith("--"))
    return sorted(set(opts) | {"--help"})


def candidates(command: str, args: list[str]) -> list[str]:
    """What may follow `cudaenv COMMAND ARGS...`: pyenv prints --help, then the rest."""
    from .selecting import inventory

    out = ["--help"] + [o for o in _options(command) if o != "--help"]
    prev = args[-1] if args else ""
    if command == "env" and prev == "--format":
        return list(ENV_FORMATS)
    if command == "init":
        return out + ["-", *SHELLS]
    if command in TAKES_VERSION:
        specs: set[str] = set()
        for tk in inventory.installed():
            parts = tk.release.split(".")
            specs.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        return out + sorted(specs, key=_spec_key) + ["system"]
    if command in ("which", "whence"):
        names = set()
        for tk in inventory.installed():
            names.update(tk.programs())
        return out + sorted(names)
    if command == "exec":
        from .selecting import selection

        try:
            root = selection.current().root
        except selection.SelectionError:
            return out
        from .selecting.inventory import Installed

        return out + Installed("", str(root), "").programs()
    if command in ("help",):
        from .cli import visible_commands

        return visible_commands()
    return out


def _spec_key(spec: str):
    return tuple(int(p) for p in spec.split(".")), len(spec)

