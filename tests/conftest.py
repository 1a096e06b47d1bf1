import os
import sys
from pathlib import Path

# Test helpers (toolkits.py, sandbox.py, selection_cases.py) import as top-level modules.
sys.path.insert(0, str(Path(__file__).parent))
