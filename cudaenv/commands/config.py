"""`cudaenv config`: every setting's value and where it came from."""

from __future__ import annotations

import json

import click

from ..foundation import settings


@click.command(epilog="""\b
Examples:
  cudaenv config                     # every setting: value and where it came from
  cudaenv config source              # one setting's value (the key or CUDAENV_SOURCE)
  cudaenv config --json              # for scripts
  cudaenv config --files             # the configuration files, in precedence order
\b
The environment wins over ~/.config/cudaenv/config.toml, which wins over
/etc/cudaenv/config.toml. Keys are the variables' names without CUDAENV_ in
lower case (source = "pypi"). The store, the selection and the shared stores
are read from the environment only: the shims read them too.""")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@click.option("--files", is_flag=True, help="List the configuration files cudaenv reads, lowest precedence first.")
def config(name: str | None, as_json: bool, files: bool) -> None:
    """Show the effective settings and where each comes from."""
    from ..foundation.errors import InputError

    if files:
        paths = [{"scope": scope, "path": path} for scope, path in settings.config_files()]
        if as_json:
            click.echo(json.dumps({"schema": "cudaenv.config-files/1", "files": paths}, indent=2))
        else:
            for row in paths:
                click.echo(f"{row['scope']:<7} {row['path']}")
        return
    wanted = list(settings.SETTINGS.values())
    if name is not None:
        setting = settings.SETTINGS.get(name) or settings.BY_KEY.get(name)
        if setting is None:
            raise InputError(f"unknown setting {name[:40]!r}; `cudaenv config` lists them")
        wanted = [setting]
    rows: list[dict[str, object]] = [{"name": s.name, "key": s.key, "value": settings.get(s.name), "origin": settings.origin(s.name),
             "in_files": s.in_files} for s in wanted]
    if as_json:
        click.echo(json.dumps({"schema": "cudaenv.config/1", "settings": rows}, indent=2))
    elif name is not None:
        click.echo(rows[0]["value"])
    else:
        width = max(len(s.name) for s in wanted)
        for r in rows:
            click.echo(f"{r['name']:<{width}}  {r['value'] or '(unset)'}  [{r['origin']}]")
