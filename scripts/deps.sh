#!/usr/bin/env bash
# Installs shardlab's system packages if any is missing (apt-get as root, sudo otherwise),
# or stops with the exact command to run. Called by `make deps` and before every build.
set -euo pipefail
packages=(g++ libopenmpi-dev openmpi-bin libeigen3-dev libopenblas-dev catch2 nlohmann-json3-dev libcli11-dev libssl-dev pkg-config python3 iproute2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
echo "shardlab: installing missing packages: ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "shardlab: no apt-get here. Install OpenMPI, Eigen 3.4, OpenBLAS, Catch2 v2, nlohmann/json, CLI11, OpenSSL (libcrypto) and python3 (tests), then run make again." >&2
  exit 1
fi
if [ "$(id -u)" = 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $cmd
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq
  sudo DEBIAN_FRONTEND=noninteractive $cmd
else
  echo "shardlab: missing packages. Run:  sudo apt-get update && sudo $cmd" >&2
  exit 1
fi
