"""A stand-in for FlashInfer 0.7.4 (tests/buildmodes.py): only its JIT's toolkit lookup and build."""

__version__ = "0.7.4"
