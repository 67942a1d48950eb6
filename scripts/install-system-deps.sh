#!/usr/bin/env bash
# Installs the Debian packages Lagwatch needs, only those that are missing.
#   run:  a JDK (Spark, the JMX backends, the JMX test double)
#   test: the above plus chromium (headless browser tests), Alertmanager and Prometheus
#         (`prometheus` brings promtool; tests/api scrape `lagwatch api` with it), the image
#         tools below, and podman-compose (tests/deploy read deploy/compose.yaml with its python3-yaml)
#   image: podman, runc and debootstrap (scripts/build-image.sh; tests/deploy build and run the image)
set -euo pipefail
profile="${1:-run}"

need=()
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
if [ "$profile" = "test" ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  command -v prometheus-alertmanager >/dev/null 2>&1 || need+=(prometheus-alertmanager)
  command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
  command -v podman-compose >/dev/null 2>&1 || need+=(podman-compose)
  command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
fi
if [ "$profile" = "test" ] || [ "$profile" = "image" ]; then
  command -v podman >/dev/null 2>&1 || need+=(podman runc)
  command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
fi
[ ${#need[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "installing Debian packages: ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# Debian starts services on install; Lagwatch's tests start their own Alertmanager.
if [ "$profile" = "test" ] && command -v systemctl >/dev/null 2>&1; then
  $sudo systemctl disable --now prometheus-alertmanager >/dev/null 2>&1 || true
  $sudo systemctl disable --now prometheus prometheus-node-exporter >/dev/null 2>&1 || true
fi
echo "installed: ${need[*]}"
