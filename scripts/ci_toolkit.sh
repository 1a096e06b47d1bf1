#!/usr/bin/env bash
# Print the root of a real CUDA 13.0 toolkit for the tests that compile with nvcc.
# The first run installs it with cudaenv itself from PyPI (13.x wheels are a complete
# toolkit: nvcc, ptxas, headers, libcudart) into a cache directory; later runs reuse it.
#
#   CUDAENV_TEST_REAL_TOOLKIT=$(bash scripts/ci_toolkit.sh)
#
# The cache is $CUDAENV_CI_CACHE, default ~/.cache/cudaenv-ci. Needs cudaenv importable
# (pip install -e .). Progress goes to stderr; stdout is only the path.
set -euo pipefail

cache=${CUDAENV_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cudaenv-ci}
# A store of its own, managed toolkits only: the answer never depends on this machine's
# /usr/local/cuda-*, nor on a CUDAENV_* setting of the caller.
while IFS='=' read -r name _; do
  case $name in CUDAENV_TEST_*) ;; CUDAENV_*) unset "$name" ;; esac
done < <(env)
export CUDAENV_ROOT="$cache/root" CUDAENV_CACHE_DIR="$cache/downloads" CUDAENV_SYSTEM_SEARCH=""

if root=$(python -m cudaenv prefix 13.0 2>/dev/null) && [ -x "$root/bin/nvcc" ]; then
  echo "real toolkit: reusing $root" >&2
else
  start=$SECONDS
  python -m cudaenv install 13.0 --source pypi >&2
  root=$(python -m cudaenv prefix 13.0)
  # The toolkit holds its files now; the downloaded wheels are not needed again.
  rm -rf "$CUDAENV_CACHE_DIR"
  echo "real toolkit: installed $root in $((SECONDS - start))s" >&2
fi
"$root/bin/nvcc" --version | grep -q 'release 13\.0' || { echo "real toolkit: $root/bin/nvcc is not 13.0" >&2; exit 1; }
echo "$root"
