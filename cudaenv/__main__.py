"""`cudaenv` and `python -m cudaenv`.

The hottest read-only commands (`which`, `version`, `prefix`, `root`) are
answered by cudaenv.fastpath without importing click; everything else, and any
option such as --help, goes through the click CLI.

Whatever a command meets on the way (a store it may not write, a deleted
working directory, a setting that is not a path), the user gets one line
and an exit status (cudaenv/foundation/errors.py), never a traceback. A bug in cudaenv
itself (a command module that fails to import) is an internal error, 70,
with the traceback in development (CUDAENV_DEBUG=1, or a git checkout).
"""

from __future__ import annotations

import sys


def _dispatch() -> None:
    from . import fastpath

    code = fastpath.fast_path(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from .cli import main

    main(prog_name="cudaenv")


def run() -> None:
    # Every line any command prints shows text and never drives the terminal
    # (cudaenv/foundation/terminal.py).
    from .foundation.terminal import guard_streams

    guard_streams()
    # The one handler: the fast path and every click command raise a
    # CudaenvError, and it is printed here as `cudaenv: <message>` (+ hint).
    from .foundation.errors import CudaenvError, InternalError, report

    try:
        _dispatch()
    except InternalError as e:
        if e.show_traceback:
            import traceback

            traceback.print_exception(e.__cause__ or e)
        sys.exit(report(e))
    except CudaenvError as e:
        sys.exit(report(e))
    except OSError as e:
        # The last resort for the environment failing under a command: the
        # file and the system's reason, which is what there is to say.
        where = f"{e.filename}: " if e.filename else ""
        print(f"cudaenv: {where}{e.strerror or e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    run()
