#!/bin/sh
# Install the CUDA toolkit an image needs, for examples/docker/Dockerfile.
#
#   install-toolkit.sh [--link PATH] [VERSION]
#
# VERSION defaults to what .cuda-version in the current directory selects. The
# toolkit becomes the store's global default (so the shims on PATH use it from
# any directory), and with --link, PATH becomes a symlink to its root, which
# gives the image one fixed CUDA_HOME to put in ENV (an ENV cannot be computed
# by a RUN step). Archives are kept in the download cache (CUDAENV_CACHE_DIR),
# which the Dockerfile mounts as a build cache, so rebuilding a layer after the
# cache was filled downloads nothing.
#
# Environment: CUDAENV_PROFILE (minimal|build|full, default minimal),
# CUDAENV_SOURCE (auto|redist|apt|pypi, default auto), and cudaenv's own
# variables (CUDAENV_ROOT, CUDAENV_REDIST_URL, ...).
set -eu

die() { printf 'install-toolkit: %s\n' "$*" >&2; exit 1; }

link=
while [ $# -gt 0 ]; do
    case $1 in
        --link) [ $# -ge 2 ] || die "--link needs a path"; link=$2; shift 2 ;;
        --link=*) link=${1#--link=}; shift ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option '$1': allowed are --link PATH and a version" ;;
        *) break ;;
    esac
done
[ $# -le 1 ] || die "at most one version, got: $*"
version=${1:-}

if [ -z "$version" ]; then
    [ -f .cuda-version ] || die "no version given and no .cuda-version in $(pwd)"
    # cudaenv reads and validates the file; `local` prints exactly its value.
    version=$(cudaenv local) || exit 1
fi

# cudaenv validates the version (exit 1 with the allowed forms) before using it.
cudaenv install --keep-cache --quiet \
    --profile "${CUDAENV_PROFILE:-minimal}" --source "${CUDAENV_SOURCE:-auto}" "$version"
cudaenv global "$version"
root=$(cudaenv prefix "$version")

if [ -n "$link" ]; then
    mkdir -p "$(dirname "$link")"
    ln -sfn "$root" "$link"
fi
printf 'install-toolkit: CUDA %s at %s%s\n' "$version" "$root" "${link:+ (linked from $link)}"
