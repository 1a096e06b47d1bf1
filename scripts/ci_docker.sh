#!/usr/bin/env bash
# Give the real `docker build` test of examples/docker/Dockerfile.multistage a Docker daemon and
# a base image on a machine without Docker Hub. Prints the base image's tag on stdout; progress
# goes to stderr.
#
#   CUDAENV_TEST_DOCKER_BASE=$(bash scripts/ci_docker.sh)
#
# 1. Packages: Debian's docker.io (daemon, and a 20.10 client whose BuildKit is built in: the
#    Dockerfile's RUN --mount needs BuildKit, and Debian 12 has no buildx) and debootstrap, when
#    missing and this runs as root with apt-get.
# 2. A daemon: when no `docker info` answers and this runs as root, start dockerd detached. It
#    picks its storage driver itself (overlay2 where the kernel offers it, else vfs, which copies
#    every layer). No iptables and no bridge: the test builds and runs with --network host.
# 3. A base image standing in for python:3.12-slim, which lives on Docker Hub: Debian bookworm
#    (debootstrap --variant=minbase from deb.debian.org) with python3, pip, venv and
#    ca-certificates, under a tag that says it is local. pip installs as root into /usr/local, as
#    in the python image: Debian's EXTERNALLY-MANAGED marker is removed. The certificate
#    authorities this machine adds (/usr/local/share/ca-certificates, e.g. a TLS-inspecting egress
#    proxy's) are trusted in the image too, or its pip could not reach PyPI from here where the
#    host's can. The root filesystem is
#    kept as a tarball in $CUDAENV_CI_CACHE/docker (default ~/.cache/cudaenv-ci/docker): a later
#    run imports it, or finds the image already loaded.
#
# Exits 1 with the reason on stderr when there is no daemon and none can be started here; the
# test then skips and says why.
set -euo pipefail

tag=${CUDAENV_TEST_DOCKER_BASE:-cudaenv-test/python-base:bookworm}
cache=${CUDAENV_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cudaenv-ci}/docker
suite=bookworm
mirror=${CUDAENV_CI_DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=python3,python3-pip,python3-venv,python-is-python3,ca-certificates
local_cas=(/usr/local/share/ca-certificates/*.crt)
[ -e "${local_cas[0]}" ] || local_cas=()
# What the image is made of: a changed recipe gets a new tarball and a new image, never a stale one.
recipe=$({ printf '%s\n' "$suite" "$packages" "no-EXTERNALLY-MANAGED" "LANG=C.UTF-8"; cat "${local_cas[@]}" /dev/null; } \
  | sha256sum | cut -c1-12)
tarball=$cache/python-base-$suite-$recipe.tar
say() { echo "ci_docker: $*" >&2; }
start=$SECONDS

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    say "cannot install ${missing[*]}: not root or no apt-get"
    exit 1
  fi
  say "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2 \
    || { apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2; }
fi

mkdir -p "$cache"
if docker info >/dev/null 2>&1; then
  say "daemon: already running ($(docker info --format '{{.Driver}}') storage)"
elif [ "$(id -u)" != 0 ]; then
  say "no Docker daemon answers and starting one needs root"
  exit 1
else
  setsid dockerd --iptables=false --ip6tables=false --bridge=none >"$cache/dockerd.log" 2>&1 < /dev/null &
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && break
    kill -0 $! 2>/dev/null || break
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    say "dockerd did not start here; the end of $cache/dockerd.log:"
    tail -n 5 "$cache/dockerd.log" >&2
    exit 1
  fi
  say "daemon: started dockerd (pid $!, $(docker info --format '{{.Driver}}') storage, log $cache/dockerd.log)"
fi

if [ "$(docker info --format '{{.Driver}}')" = vfs ] && grep -qw overlay /proc/filesystems; then
  say "warning: the daemon's vfs storage copies every layer in full (the docker test takes minutes and"
  say "gigabytes, not seconds); this kernel has overlayfs: restart dockerd without --storage-driver=vfs"
fi

if [ "$(docker image inspect --format '{{index .Config.Labels "org.cudaenv.test-base"}}' "$tag" 2>/dev/null)" = "$recipe" ]; then
  say "base image: $tag already loaded"
  echo "$tag"
  exit 0
fi

if [ ! -s "$tarball" ]; then
  rootfs=$(mktemp -d "$cache/rootfs.XXXXXX")
  trap 'rm -rf "$rootfs" "$tarball.part"' EXIT
  say "base image: debootstrap $suite ($packages) from $mirror"
  debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" >"$cache/debootstrap.log" 2>&1 \
    || { tail -n 5 "$cache/debootstrap.log" >&2; exit 1; }
  rm -f "$rootfs"/usr/lib/python3*/EXTERNALLY-MANAGED
  if [ "${#local_cas[@]}" -gt 0 ]; then
    cp "${local_cas[@]}" "$rootfs/usr/local/share/ca-certificates/"
    chroot "$rootfs" update-ca-certificates >&2
  fi
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar --numeric-owner -C "$rootfs" -cf "$tarball.part" .
  rm -f "$cache"/python-base-*.tar  # an older recipe's
  mv "$tarball.part" "$tarball"
  rm -rf "$rootfs"
  trap - EXIT
fi
docker import \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["python3"]' \
  --change "LABEL org.cudaenv.test-base=$recipe" \
  --message "Debian $suite minbase with python3 and pip: a local stand-in for python:3.12-slim" \
  "$tarball" "$tag" >/dev/null
say "base image: imported $tag from $tarball ($(du -h "$tarball" | cut -f1)) in $((SECONDS - start))s"
echo "$tag"
