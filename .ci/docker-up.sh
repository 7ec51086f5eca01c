#!/usr/bin/env bash
# Make a usable Docker engine and the test image available; idempotent, run as root on Debian.
#   1. install docker.io and debootstrap with apt if they are missing;
#   2. start dockerd in the background if `docker info` fails, and wait up to 60 s for it;
#   3. build reposim/base:bookworm-2 (`reposim image bootstrap`) if the image is not cached.
# Exits non-zero with one clear message when any step fails. Called by .ci/run.
set -euo pipefail

IMAGE="${REPOSIM_TEST_IMAGE:-reposim/base:bookworm-2}"
cd "$(dirname "$0")/.."

fail() { echo "docker-up: $*" >&2; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
  if docker info >/dev/null 2>&1 && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    echo "docker-up: engine running and $IMAGE present (not root; nothing to do)."
    exit 0
  fi
  fail "run as root (installing Docker, starting dockerd and debootstrap need it)."
fi

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "docker-up: installing ${missing[*]} with apt..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/tmp/docker-up-apt.log 2>&1 \
    || fail "apt-get update failed; see /tmp/docker-up-apt.log."
  apt-get install -y -qq "${missing[@]}" >>/tmp/docker-up-apt.log 2>&1 \
    || fail "could not install ${missing[*]}; see /tmp/docker-up-apt.log."
fi

if ! docker info >/dev/null 2>&1; then
  echo "docker-up: starting dockerd (log in /tmp/dockerd.log)..."
  nohup dockerd >/tmp/dockerd.log 2>&1 &
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 \
    || fail "dockerd did not become ready within 60 s; see /tmp/dockerd.log."
fi
echo "docker-up: engine $(docker version --format '{{.Server.Version}}') is running."

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "docker-up: $IMAGE is cached."
else
  echo "docker-up: building $IMAGE with debootstrap (about three minutes)..."
  uv run reposim image bootstrap --tag "$IMAGE" || fail "could not build $IMAGE (see above)."
fi
