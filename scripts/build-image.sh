#!/usr/bin/env bash
# Builds Lagwatch's image with podman where no image registry is reachable: the base is a Debian
# root made by debootstrap and imported with `podman import`, cached in .image-cache/ under a key
# of what goes into it (suite, mirrors, packages, the recipe below), so it is made once. PyPI and
# the Debian mirror are still needed (pip and apt run in the build); pip trusts the host's CA
# bundle, so a TLS-inspecting proxy the host trusts works too.
#   scripts/build-image.sh              build $LAGWATCH_IMAGE (default lagwatch:dev)
#   scripts/build-image.sh --base-only  make or reuse the base and print its name
# Settings: LAGWATCH_BASE_SUITE (bookworm), LAGWATCH_BASE_MIRROR, LAGWATCH_BASE_SECURITY_MIRROR.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${LAGWATCH_IMAGE:-lagwatch:dev}"
SUITE="${LAGWATCH_BASE_SUITE:-bookworm}"
MIRROR="${LAGWATCH_BASE_MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${LAGWATCH_BASE_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
PACKAGES="python3,python3-venv,ca-certificates"
CACHE=.image-cache
# podman's default ulimits can exceed the host's hard limits (setrlimit refused in the build).
ULIMITS=(--ulimit nofile=16384:16384 --ulimit nproc=4096:4096)
CA_BUNDLE="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}"

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

make_base() { # $1: an empty folder to turn into the base's root
  $sudo debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$1" "$MIRROR" >"$CACHE/debootstrap.log"
  printf 'deb %s %s main\n' "$MIRROR" "$SUITE" "$MIRROR" "$SUITE-updates" "$SECURITY_MIRROR" "$SUITE-security" |
    $sudo tee "$1/etc/apt/sources.list" >/dev/null
  $sudo rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb
}

base_key() {
  printf '%s\n' "$SUITE" "$MIRROR" "$SECURITY_MIRROR" "$PACKAGES" "$(declare -f make_base)" | sha256sum | cut -c1-12
}

# The base image's name; made from the cached root tarball, itself made by debootstrap when absent.
base_image() {
  local key tag tarball root
  key="$(base_key)"
  tag="localhost/lagwatch-base:$key"
  tarball="$CACHE/base-$key.tar"
  podman image exists "$tag" && { echo "$tag"; return; }
  mkdir -p "$CACHE"
  if [ ! -f "$tarball" ]; then
    echo "debootstrap $SUITE ($PACKAGES) into $CACHE (log: $CACHE/debootstrap.log)" >&2
    root="$(mktemp -d "$CACHE/root.XXXXXX")"
    make_base "$root"
    $sudo tar -C "$root" --numeric-owner -cf "$tarball.partial" .
    $sudo rm -rf "$root"
    mv "$tarball.partial" "$tarball"
  fi
  podman import --quiet --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' "$tarball" "$tag" >/dev/null
  echo "$tag"
}

main() {
  local base started secret=()
  started=$SECONDS
  base="$(base_image)"
  [ "${1:-}" = "--base-only" ] && { echo "$base"; return; }
  [ -s "$CA_BUNDLE" ] && secret=(--secret "id=pip_cert,src=$CA_BUNDLE")
  # --format docker keeps the HEALTHCHECK (the OCI format has none); runc: crun fails on some hosts.
  podman build --format docker --runtime runc --network host "${ULIMITS[@]}" "${secret[@]}" \
    --build-arg BASE_IMAGE="$base" --tag "$IMAGE" .
  echo "built $IMAGE on $base in $((SECONDS - started)) s"
}

main "$@"
