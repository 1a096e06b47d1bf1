"""Compatibility data shipped with cudaenv (JSON files beside this module).

Each file names its sources; scripts/ in the repository regenerates or checks them.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

_DIR = Path(__file__).parent


@lru_cache(maxsize=None)
def load(name: str) -> dict:
    return json.loads((_DIR / name).read_text())
