"""A stand-in for torch 2.13.0+cu130 (tests/buildmodes.py): only what cpp_extension reads."""

from . import cuda, version

__version__ = version.__version__
__all__ = ["cuda", "version"]
