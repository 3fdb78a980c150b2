#!/usr/bin/env bash
# Installs every Debian 12 package that Stria's build, tests and benchmarks need, and makes
# FUSE usable (/dev/fuse present, user_allow_other set). Idempotent: when everything is
# already there it only checks and returns. Run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libfuse3-dev fuse3
  librocksdb-dev liburing-dev libjemalloc-dev
  libprotobuf-dev protobuf-compiler
  libboost-dev
  libibverbs-dev librdmacm-dev rdma-core ibverbs-utils
  libgtest-dev libgmock-dev googletest
  libisal-dev libspdlog-dev libfmt-dev libcli11-dev
  fio iproute2 psmisc attr util-linux procps python3
  python3-pip python3-setuptools python3-wheel python3-pytest python3-numpy python3-torch
  python3-fsspec libssl-dev
  clang-14 libclang-rt-14-dev
  libcivetweb-dev python3-prometheus-client
  groff-base
  libtomlplusplus-dev
)

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    echo "install-deps: run as root (or install sudo)" >&2
    exit 1
  fi
fi

# Which packages are not installed yet ("ii" = installed and configured).
# One dpkg-query for all of them; a package it does not know is missing too.
declare -A installed=()
while read -r abbrev name; do
  [[ "$abbrev" == ii* ]] && installed["${name%%:*}"]=1
done < <(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${PACKAGES[@]}" 2>/dev/null || true)
missing=()
for pkg in "${PACKAGES[@]}"; do
  [[ -n "${installed[$pkg]:-}" ]] || missing+=("$pkg")
done

if ((${#missing[@]} > 0)); then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -q
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all ${#PACKAGES[@]} packages present"
fi

# FUSE: the device node, and user_allow_other so non-root mounts may use allow_other.
if [[ ! -c /dev/fuse ]]; then
  if ! command -v modprobe >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q kmod || true
  fi
  "${SUDO[@]}" modprobe fuse 2>/dev/null || true
fi
if [[ ! -c /dev/fuse ]]; then
  # In a container the module may be loaded on the host while the node is missing here.
  "${SUDO[@]}" mknod -m 0666 /dev/fuse c 10 229 2>/dev/null || true
fi
if [[ ! -c /dev/fuse ]]; then
  echo "install-deps: warning: /dev/fuse is missing and could not be created;" \
       "FUSE mounts (stria-fuse, the fuse tests) will fail" >&2
fi
if [[ ! -f /etc/fuse.conf ]] || ! grep -qx 'user_allow_other' /etc/fuse.conf; then
  echo 'user_allow_other' | "${SUDO[@]}" tee -a /etc/fuse.conf >/dev/null
  echo "install-deps: enabled user_allow_other in /etc/fuse.conf"
fi
