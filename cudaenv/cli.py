"""The `cudaenv` command: a thin dispatcher over cudaenv.commands.

Each subcommand lives in a module under cudaenv/commands/ and is imported only
when it runs, so `cudaenv which nvcc` never pays for requests or the resolver.
"""

from __future__ import annotations

import importlib
import sys

import click

# name -> "module:attribute"; one line per command, in the order `--help` lists them.
COMMANDS = {
    "version": "cudaenv.commands.core:version",
    "root": "cudaenv.commands.core:root",
    "versions": "cudaenv.commands.core:versions",
    "local": "cudaenv.commands.core:local",
    "global": "cudaenv.commands.core:global_",
    "shell": "cudaenv.commands.shellcmds:shell",
    "prefix": "cudaenv.commands.core:prefix",
    "which": "cudaenv.commands.core:which",
    "exec": "cudaenv.commands.core:exec_",
    "env": "cudaenv.commands.core:env",
    "install": "cudaenv.commands.installcmds:install",
    "uninstall": "cudaenv.commands.installcmds:uninstall",
    "cache": "cudaenv.commands.installcmds:cache",
    "resolve": "cudaenv.commands.diagnose:resolve",
    "doctor": "cudaenv.commands.diagnose:doctor",
    "mirror": "cudaenv.commands.mirror:mirror",
    "modulefiles": "cudaenv.commands.modules:modulefiles",
    "export": "cudaenv.commands.export:export",
    "rehash": "cudaenv.commands.shellcmds:rehash",
    "init": "cudaenv.commands.shellcmds:init",
    "sh-shell": "cudaenv.commands.shellcmds:sh_shell",
}
HIDDEN = {"sh-shell"}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return [n for n in COMMANDS if n not in HIDDEN]

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError):
            # A command whose module is not there yet is simply not offered.
            return None

    def format_commands(self, ctx, formatter):
        # Listing help for every command would import every module; show the
        # short help from each command instead, which is what users read.
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None:
                rows.append((name, cmd.get_short_help_str(limit=70)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="""\b
Examples:
  cudaenv install 13.0        # fetch a toolkit, verified, no root needed
  cudaenv local 13.0          # select it for this directory (.cuda-version)
  cudaenv which nvcc          # the real nvcc this directory uses
  cudaenv doctor              # check GPU, driver, torch and toolkit together
  eval "$(cudaenv init - bash)"   # shims + per-directory CUDA_HOME in your shell

The store lives in $CUDAENV_ROOT (default: the user data dir; `cudaenv root` prints it).""",
)
@click.version_option(package_name="cudaenv", prog_name="cudaenv", message="%(prog)s %(version)s")
def main():
    """cudaenv: install CUDA toolkits side by side and select one per directory."""

