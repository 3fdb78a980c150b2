#!/usr/bin/env bash
# Command-line checks of lfs and lctl that need no cluster: versions, help, and the exit
# status and stderr of bad invocations (usage errors exit 22, as Lustre's lfs).
# Usage: cli_test.sh BIN_DIR
set -uo pipefail
BIN=${1:?usage: cli_test.sh BIN_DIR}
fails=0

# expect CODE CMD...: runs CMD, checks its exit status.
expect() {
  local want=$1
  shift
  local err
  err=$(mktemp)
  "$@" > /dev/null 2> "$err"
  local got=$?
  if [[ $got -ne $want ]]; then
    echo "FAIL: '$*' exited $got, want $want; stderr:" >&2
    cat "$err" >&2
    fails=$((fails + 1))
  elif [[ $want -ne 0 && ! -s "$err" ]]; then
    echo "FAIL: '$*' failed without saying why on stderr" >&2
    fails=$((fails + 1))
  fi
  rm -f "$err"
}

expect 0 "$BIN/lfs" --version
expect 0 "$BIN/lfs" help
expect 0 "$BIN/lfs" help setstripe
expect 22 "$BIN/lfs"
expect 22 "$BIN/lfs" frobnicate
expect 22 "$BIN/lfs" help frobnicate
expect 22 "$BIN/lfs" setstripe -c 0 /tmp/x
expect 22 "$BIN/lfs" setstripe -c -2 /tmp/x
expect 22 "$BIN/lfs" setstripe -c abc /tmp/x
expect 22 "$BIN/lfs" setstripe -S 1000 /tmp/x
expect 22 "$BIN/lfs" setstripe -S 100k /tmp/x
expect 22 "$BIN/lfs" setstripe -S 5G /tmp/x
expect 22 "$BIN/lfs" setstripe -i -5 /tmp/x
expect 22 "$BIN/lfs" setstripe --no-such-flag /tmp/x
expect 22 "$BIN/lfs" setstripe -c 4
expect 22 "$BIN/lfs" setstripe -d -c 2 /tmp/x
expect 22 "$BIN/lfs" getstripe
expect 22 "$BIN/lfs" getstripe --bogus /tmp
expect 22 "$BIN/lfs" df -x
expect 22 "$BIN/lfs" find
expect 22 "$BIN/lfs" find /tmp --type q
# A path that is not on a Stria filesystem: ENOENT, with a message.
expect 2 "$BIN/lfs" getstripe /proc
expect 2 "$BIN/lfs" setstripe -c 2 /proc/stria-no-such-file

expect 0 "$BIN/lctl" --version
expect 0 "$BIN/lctl" help
expect 0 "$BIN/lctl" list_nids
expect 22 "$BIN/lctl"
expect 22 "$BIN/lctl" frobnicate
expect 22 "$BIN/lctl" ping
expect 22 "$BIN/lctl" ping not-a-nid
expect 22 "$BIN/lctl" --mgs 127.0.0.1@tcp:1 set_param novalue
expect 22 "$BIN/lctl" --mgs 127.0.0.1@tcp:1 get_param
expect 22 "$BIN/lctl" --mgs 127.0.0.1@tcp:1 scrub --ost
expect 22 "$BIN/lctl" --mgs 127.0.0.1@tcp:1 scrub --ost notanumber
expect 22 "$BIN/lctl" --mgs 127.0.0.1@tcp:1 scrub --timeout 0
expect 22 "$BIN/lctl" --mgs 127.0.0.1@tcp:1 scrub --bogus

if ((fails > 0)); then
  echo "$fails check(s) failed" >&2
  exit 1
fi
echo "all lfs/lctl command-line checks passed"
