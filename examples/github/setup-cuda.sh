#!/usr/bin/env bash
# The logic of the repository's GitHub Action (action.yml), kept in a script so it
# can be run and tested anywhere: GitHub only provides the files named by
# GITHUB_ENV, GITHUB_PATH and GITHUB_OUTPUT, which this script appends to.
#
#   setup-cuda.sh plan      which release to install, the cache directory, the path to cache
#                           (its archives) and the cache key
#   setup-cuda.sh install   install it (keeping the archives for the cache) and export
#                           CUDA_HOME, CUDA_PATH, CUDAToolkit_ROOT, CUDACXX and PATH
#
# Inputs (environment): INPUT_VERSION (empty: what .cuda-version selects in
# INPUT_WORKING_DIRECTORY), INPUT_PROFILE (minimal|build|full), INPUT_SOURCE
# (auto|redist|apt|pypi). cudaenv's own variables (CUDAENV_REDIST_URL, ...) pass through.
#
# The checkout is data, never code: every Python here is isolated (-I: no script
# directory or current directory on sys.path, no PYTHON* variables, no user site),
# cudaenv itself runs as `python3 -I -m cudaenv` (its console script would honour
# PYTHONPATH), and all of it runs from a private empty directory, so a json.py,
# cudaenv/__init__.py, sitecustomize.py or .pth in the repository runs nothing.
#
# Nothing the checkout holds runs as a program either: before anything else, pure shell drops
# PATH's empty and relative entries (a shell reads them as the current directory, the
# checkout), and the few helpers run by `command -p` (the system's default path).
_rest=${PATH-}: PATH=
while [ -n "$_rest" ]; do
    case ${_rest%%:*} in /*) PATH=${PATH:+$PATH:}${_rest%%:*} ;; esac
    _rest=${_rest#*:}
done
unset _rest
export PATH
case ${TMPDIR-} in /*) ;; *) unset TMPDIR ;; esac
set -euo pipefail

# What every Python step here starts with: each message is one line, its values escaped by
# cudaenv's own notation (cudaenv.foundation.terminal) and its newlines written as \n, and
# an unexpected error is such a line too, not a traceback.
PRELUDE='
import sys
def say(msg, file=sys.stdout):
    try:
        from cudaenv.foundation.terminal import escape
    except ImportError:  # cudaenv is not installed here: ascii() escapes, all on one line
        def escape(text):
            return ascii(text)[1:-1]
    print("setup-cuda: " + escape(str(msg)).replace("\n", "\\n"), file=file, flush=True)
def fail(msg):
    say(msg, sys.stderr)
    sys.exit(1)
sys.excepthook = lambda t, e, tb: say(f"{t.__name__}: {e}", sys.stderr)
'
# A Python step: the prelude, then its code (read from standard input by `read`, a builtin).
py() { local code; IFS= read -r -d '' code || true; python3 -I -c "$PRELUDE$code" "$@"; }
cudaenv() { python3 -I -m cudaenv "$@"; }
# One escaped line; where even Python cannot start, every byte that is not printable ASCII is '?'.
say() {
    py "$@" <<<'say(" ".join(sys.argv[1:]))' 2>/dev/null || {
        local LC_ALL=C m="$*"
        m=${m//$'\n'/\\n}
        printf 'setup-cuda: %s\n' "${m//[^[:print:]]/?}"
    }
}
die() { say "$@" >&2; exit 1; }

mode=${1:-}
: "${GITHUB_ENV:?GITHUB_ENV is not set}" "${GITHUB_PATH:?GITHUB_PATH is not set}" "${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}"
version=${INPUT_VERSION:-}
profile=${INPUT_PROFILE:-minimal}
source=${INPUT_SOURCE:-auto}

# Where .cuda-version is looked for, as an absolute path (a name ending in a newline kept);
# the scripts run elsewhere.
workdir=$(CDPATH='' cd -- "${INPUT_WORKING_DIRECTORY:-.}" 2>/dev/null && pwd && echo .) || workdir=
workdir=${workdir%$'\n.'}
scratch=$(command -p mktemp -d)
trap 'command -p rm -rf -- "$scratch"' EXIT
cd "$scratch"

[ -n "$workdir" ] || die "working-directory '${INPUT_WORKING_DIRECTORY:-.}' is not a directory"
case $profile in minimal|build|full) ;; *) die "invalid profile '$profile': allowed are minimal, build, full";; esac
case $source in auto|redist|apt|pypi) ;; *) die "invalid source '$source': allowed are auto, redist, apt, pypi";; esac

# The spec to install: the input, else what selects a toolkit here (CUDAENV_VERSION,
# .cuda-version up the tree, the global file). cudaenv's parser validates it
# either way before it is used anywhere.
version=$(py "$version" "$workdir" <<'PY'
from pathlib import Path
from cudaenv.selecting import selection
from cudaenv.foundation.versions import InvalidVersion, parse_spec
try:
    spec = parse_spec(sys.argv[1].strip()) if sys.argv[1] else selection.select(Path(sys.argv[2])).spec
except (InvalidVersion, selection.SelectionError) as e:
    fail(e)
if spec.is_system:
    fail("no version input and no .cuda-version here or above (or it says 'system'); give a release such as 13.0")
print(spec.text)
PY
)

case $mode in
plan)
    # Key the cache by the exact release the source offers for the spec, so a new
    # 13.0.x makes a new cache instead of restoring one that only half helps.
    # cudaenv's own answer first: where it refuses, its one line stops the script here.
    listing=$(cudaenv install --list --json --source "$source")
    release=$(printf '%s' "$listing" | py "$version" 3<&0 <<'PY'
import json, os
from cudaenv.foundation.versions import Release, newest_match, parse_spec
offered = {Release.parse(r) for rels in json.load(os.fdopen(3))["releases"].values() for r in rels}
print(newest_match(parse_spec(sys.argv[1]), offered) or sys.argv[1])
PY
)
    # A line of GITHUB_OUTPUT each: a newline in the path would write outputs of its own.
    cache_dir=$(py <<'PY'
from cudaenv.foundation import store
from cudaenv.foundation.terminal import unsafe
d = str(store.cache_dir())
if unsafe(d) or "\n" in d:
    fail(f"the download cache directory '{d}' holds a control character; use a path without one "
         "(CUDAENV_CACHE_DIR, XDG_CACHE_HOME)")
print(d)
PY
)
    {
        echo "version=$version"
        echo "release=$release"
        echo "cache-dir=$cache_dir"
        # What the Action caches: the archives alone, which every install hashes again
        # before use. Plans and unpacked trees are sealed by a key of this runner's
        # that no restored cache carries, so they would be rebuilt anyway.
        echo "cache-path=$cache_dir/sha256"
        echo "cache-key=cudaenv-$(command -p uname -s)-$(command -p uname -m)-$release-$profile-$source"
    } >>"$GITHUB_OUTPUT"
    say "$version -> $release ($profile, $source); download cache $cache_dir"
    ;;
install)
    # --keep-cache: the archives stay in the download cache for actions/cache to save.
    summary=$(cudaenv install --keep-cache --quiet --json --source "$source" --profile "$profile" "$version")
    py "$summary" <<'PY'
import json, os
from cudaenv.selecting.activation import toolkit_env
done = json.loads(sys.argv[1])
env = toolkit_env(done["root"])
with open(os.environ["GITHUB_ENV"], "a") as f:
    for k in ("CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT", "CUDACXX"):
        f.write(f"{k}={env[k]}\n")
with open(os.environ["GITHUB_PATH"], "a") as f:
    f.write(env["CUDAENV_PATH_ENTRY"] + "\n")
with open(os.environ["GITHUB_OUTPUT"], "a") as f:
    f.write(f"release={done['release']}\ncuda-home={done['root']}\n")
say(f"CUDA {done['release']} ({done['status']}) at {done['root']}")
PY
    ;;
*)
    die "usage: setup-cuda.sh plan|install"
    ;;
esac
