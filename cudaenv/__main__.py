"""`cudaenv` and `python -m cudaenv`.

The hottest read-only commands (`which`, `version`, `prefix`, `root`) are
answered by cudaenv.queries without importing click; everything else, and any
option such as --help, goes through the click CLI.
"""

from __future__ import annotations

import sys


def run() -> None:
    from . import queries

    code = queries.fast_path(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from .cli import main

    main(prog_name="cudaenv")


if __name__ == "__main__":
    run()
