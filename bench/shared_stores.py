"""The shared-stores setup of the shell benchmarks (CUDAENV_SHARED_ROOTS).

    python bench/shared_stores.py WORK

makes WORK/one (one store, toolkit 13.0.2), WORK/s1, s2 and s3 (three stores
holding 50 stub toolkits between them, 17 + 17 + 16, 13.0.2 in the last) and
WORK/proj/a/b/c/d/e, five directories below WORK/proj/.cuda-version (13.0).
Stdlib only, so any interpreter can run it.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from toolkits import managed  # noqa: E402


def main(work: Path) -> None:
    managed(work / "one", "13.0.2")
    releases = [f"12.{minor}.{patch}" for minor in range(10) for patch in range(5)][:49] + ["13.0.2"]
    for i, rel in enumerate(releases):
        managed(work / f"s{min(i // 17, 2) + 1}", rel)
    (work / "proj/a/b/c/d/e").mkdir(parents=True)
    (work / "proj/.cuda-version").write_text("13.0\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
