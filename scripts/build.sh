#!/usr/bin/env bash
# Configures and builds Stria into build/ (RelWithDebInfo, Ninja). Extra arguments go to
# cmake, e.g. `scripts/build.sh -DSTRIA_SANITIZE=address`. Binaries land in build/bin.
# BUILD_DIR and JOBS may be overridden from the environment.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-"$ROOT/build"}
JOBS=${JOBS:-$(nproc)}

cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
ninja -C "$BUILD_DIR" -j"$JOBS"
