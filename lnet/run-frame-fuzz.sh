#!/usr/bin/env bash
# Builds lnet/frame_fuzz.cc with clang's libFuzzer and runs it for a bounded time.
# Usage: run-frame-fuzz.sh SOURCE_DIR BUILD_DIR SECONDS
# Exits non-zero if the fuzzer finds a crash, a leak or an out-of-bounds access.
set -euo pipefail
src=$1 build=$2 secs=${3:-30}
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [[ -z "$cxx" ]]; then
  echo "clang++ not installed (scripts/install-deps.sh installs clang-14); cannot fuzz" >&2
  exit 1
fi
out="$build/fuzz"
mkdir -p "$out/corpus"
bin="$out/frame_fuzz"
if [[ ! -x "$bin" || "$src/lnet/frame_fuzz.cc" -nt "$bin" || "$src/lnet/frame.cc" -nt "$bin" ||
      "$src/lnet/o2ib/o2ib_msg.cc" -nt "$bin" ]]; then
  "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined \
    -I"$src" -I"$build" \
    "$src/lnet/frame_fuzz.cc" "$src/lnet/frame.cc" "$src/lnet/o2ib/o2ib_msg.cc" \
    "$src/lnet/o2ib/credits.cc" "$src/common/crc32c.cc" \
    "$src/common/status.cc" "$build/proto/stria.pb.cc" \
    -lprotobuf -lisal -lpthread -o "$bin"
fi
# A seed: one valid request frame with a small body.
python3 - "$out/corpus/seed" <<'PY' 2>/dev/null || true
import struct, sys
open(sys.argv[1], "wb").write(b"STRA" + b"\x01\x00\x1e\x00" + bytes(40) + b"\x08\x01\x12\x03abc")
PY
"$bin" -max_total_time="$secs" -rss_limit_mb=1024 -max_len=4096 "$out/corpus"
