"""The store every shell-side benchmark measures against.

    python bench/stub_store.py WORK VERSION_TEXT

makes WORK/root with managed stub toolkits 12.8.1 and 13.0.2 (tests/toolkits.py)
and WORK/proj/a/b/c/d/e, five directories below WORK/proj/.cuda-version, which
holds VERSION_TEXT. Stdlib only, so any interpreter can run it.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from toolkits import managed  # noqa: E402


def main(work: str, version_text: str) -> None:
    root = Path(work) / "root"
    for release in ("12.8.1", "13.0.2"):
        managed(root, release)
    proj = Path(work) / "proj"
    (proj / "a/b/c/d/e").mkdir(parents=True)
    (proj / ".cuda-version").write_text(version_text)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
