#!/usr/bin/env bash
# Daemons started from the config file alone (docs/operations.md, "The config file"):
# stria-mds and stria-oss take every option from [mds] / [oss] / [oss.NAME] / [global], a
# command-line flag overrides the file, an unknown key or a bad value stops them with
# FILE:LINE, and their logs go where log_target / log_file say (a syslog socket of this
# test's own). The mount takes [client]: connect_timeout from the file, -o over it.
# Usage: config_daemon_test.sh BIN_DIR
set -uo pipefail
BIN=${1:?usage: config_daemon_test.sh BIN_DIR}
T=$(mktemp -d /tmp/stria-config-test.XXXXXX)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2> /dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2> /dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
export STRIA_CONFIG=   # only what each command names
fails=0
fail() {
  echo "FAIL: $*" >&2
  fails=$((fails + 1))
}
wait_file() {  # wait_file FILE PID: until FILE is non-empty; fails if PID exits first
  local i
  for ((i = 0; i < 300; i++)); do
    [[ -s "$1" ]] && return 0
    kill -0 "$2" 2> /dev/null || return 1
    sleep 0.1
  done
  return 1
}
wait_grep() {  # wait_grep PATTERN FILE: up to 10 s
  local i
  for ((i = 0; i < 100; i++)); do
    grep -q -- "$1" "$2" 2> /dev/null && return 0
    sleep 0.1
  done
  return 1
}

# A syslog daemon of our own: every datagram to $T/log.sock, one per line, into syslog.txt.
python3 - "$T/log.sock" "$T/syslog.txt" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "ab", buffering=0) as out:
    while True:
        out.write(s.recv(65536).replace(b"\n", b"\\n") + b"\n")
PY
PIDS+=($!)
for ((i = 0; i < 50; i++)); do [[ -S "$T/log.sock" ]] && break; sleep 0.1; done

CONF="$T/stria.conf"
cat > "$CONF" <<CONF
# written by config_daemon_test.sh
[global]
log_target = "syslog:$T/log.sock"
log_level = "debug"

[mds]
fsname = "cfgtest"
data = "$T/mdt0"
listen = "127.0.0.1@tcp:0"
port_file = "$T/mds.port"
threads = 3
client_lease_ms = 5000
CONF

# ---- stria-mds from the file alone
"$BIN/stria-mds" --config "$CONF" > "$T/mds.out" 2>&1 &
MDS=$!
PIDS+=($MDS)
if ! wait_file "$T/mds.port" $MDS; then
  cat "$T/mds.out" >&2
  fail "stria-mds --config: no port file from [mds] port_file"
fi
PORT=$(cat "$T/mds.port" 2>/dev/null)
[[ -f "$T/mdt0/CURRENT" ]] || fail "stria-mds did not open RocksDB in [mds] data ($T/mdt0)"
wait_grep "stria-mds\[$MDS\]: stria-mds 'cfgtest' serving on 127.0.0.1:$PORT" "$T/syslog.txt" ||
  fail "the MDS's start line is not in the syslog socket of [global] log_target: $(cat "$T/syslog.txt")"
# Priorities: info is <30> (daemon.info); debug lines (log_level = debug) arrive too.
grep -q "^<30>.* stria-mds\[$MDS\]: stria-mds 'cfgtest' serving" "$T/syslog.txt" || fail "syslog priority of info"
grep -q "serving on" "$T/mds.out" && fail "the MDS logged to stderr though log_target is syslog"

# ---- stria-oss: [oss] with two OSTs, its log to a file ([oss] log_file beats [global])
cat >> "$CONF" <<CONF

[oss]
mgs = "127.0.0.1@tcp:$PORT"
ost = ["0:$T/ost0", "1:$T/ost1"]
listen = "127.0.0.1@tcp:0"
port_file = "$T/oss.port"
heartbeat_ms = 500
log_file = "$T/oss.log"

[oss.b]
ost = ["3:$T/ost3"]
port_file = "$T/ossb.port"
CONF
"$BIN/stria-oss" --config "$CONF" > "$T/oss.out" 2>&1 &
OSS=$!
PIDS+=($OSS)
wait_file "$T/oss.port" $OSS || { cat "$T/oss.out" >&2; fail "stria-oss --config: no port file"; }
for ((i = 0; i < 100; i++)); do
  n=$(STRIA_TOOL_TIMEOUT_MS=3000 "$BIN/lctl" --mgs "127.0.0.1@tcp:$PORT" dl 2>/dev/null | grep -c ' UP obdfilter ')
  ((n >= 2)) && break
  sleep 0.2
done
((n == 2)) || fail "the MGS lists $n OSTs, want the 2 of [oss] ost"
wait_grep "stria-oss\[$OSS\] info" "$T/oss.log" || fail "stria-oss wrote nothing to [oss] log_file"
[[ -s "$T/oss.out" ]] && grep -q " info " "$T/oss.out" && fail "stria-oss logged to stderr too"

# --instance b: [oss.b] over [oss] (its own OST and port file, [oss]'s mgs)
"$BIN/stria-oss" --config "$CONF" --instance b > "$T/ossb.out" 2>&1 &
OSSB=$!
PIDS+=($OSSB)
wait_file "$T/ossb.port" $OSSB || { cat "$T/ossb.out" >&2; fail "stria-oss --instance b: no [oss.b] port file"; }
[[ -f "$T/ost3/ost.meta" || -n "$(ls "$T/ost3" 2>/dev/null)" ]] || fail "--instance b did not serve [oss.b]'s OST 3"
kill $OSSB; wait $OSSB 2>/dev/null

# ---- the command line overrides the file
kill $OSS; wait $OSS 2>/dev/null
rm -f "$T/oss.port"
"$BIN/stria-oss" --config "$CONF" --ost "2:$T/ost2" --port-file "$T/oss-cli.port" \
  --log-target stderr --log-file "" > "$T/oss2.out" 2>&1 &
OSS=$!
PIDS+=($OSS)
wait_file "$T/oss-cli.port" $OSS || { cat "$T/oss2.out" >&2; fail "--port-file on the command line was not used"; }
[[ -e "$T/oss.port" ]] && fail "[oss] port_file was written though --port-file overrides it"
[[ -n "$(ls "$T/ost2" 2>/dev/null)" ]] || fail "--ost 2 on the command line was not served"
wait_grep "OST0002\|ost 2\|index 2" "$T/oss2.out" || true
grep -q "stria-oss\[$OSS\] info" "$T/oss2.out" || fail "--log-target stderr did not send the log to stderr"
kill $OSS; wait $OSS 2>/dev/null

# ---- errors: FILE:LINE and the key
bad() {  # bad TEXT WANT [ARGS...]
  local text=$1 want=$2 out rc
  shift 2
  printf '%s\n' "$text" > "$T/bad.conf"
  out=$(timeout 20 "$BIN/stria-mds" --config "$T/bad.conf" "$@" 2>&1)
  rc=$?
  [[ $rc -eq 1 ]] || fail "stria-mds with '$text' exited $rc, want 1: $out"
  grep -qF -- "$want" <<< "$out" || fail "stria-mds with '$text' said '$out', want '$want'"
}
bad $'[mds]\nfsname = "x"\nfsnme = "y"' "$T/bad.conf:3: unknown key 'fsnme' in [mds]"
bad $'[mds]\nfsname = "x"\ndata = "/tmp/x"\nthreads = 0' "$T/bad.conf:4: threads = 0: --threads: Value 0 not in range"
bad $'[mds]\nfsname = "x"\ndata = "/tmp/x"\nlog_target = "file"' "$T/bad.conf:4: log_target = file"
bad $'[mds]\nfsname = "x"' "--data is required"
bad $'[mdss]\nfsname = "x"' "$T/bad.conf:1:"
bad $'[mds]\nfsname = "x"\ndata = 5 5' "$T/bad.conf:3:"
out=$("$BIN/stria-mds" --config "$T/none.conf" 2>&1)
[[ $? -eq 1 ]] && grep -q "none.conf" <<< "$out" || fail "a missing --config file is not an error: $out"

# ---- the mount: [client] connect_timeout against an MGS that is not there
mkdir -p "$T/mnt"
printf '[client]\nconnect_timeout = 1\n' > "$T/client.conf"
start=$(date +%s%N)
out=$(timeout 60 "$BIN/stria-fuse" --config "$T/client.conf" 127.0.0.1@tcp:1:/x "$T/mnt" -f 2>&1)
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[[ $rc -ne 0 ]] && grep -q "did not answer" <<< "$out" || fail "mount of a dead MGS: rc $rc: $out"
((ms < 5000)) || fail "[client] connect_timeout = 1 not used: the mount gave up after $ms ms (default 15 s)"
start=$(date +%s%N)
timeout 60 "$BIN/stria-fuse" --config "$T/client.conf" -o connect_timeout=8 127.0.0.1@tcp:1:/x "$T/mnt" -f > /dev/null 2>&1
ms=$(( ($(date +%s%N) - start) / 1000000 ))
((ms >= 5000)) || fail "-o connect_timeout=8 did not override [client]'s 1 s: gave up after $ms ms"
printf '[client]\nconnect_timeout = 1\ntimout = 5\n' > "$T/client.conf"
out=$("$BIN/stria-fuse" --config "$T/client.conf" 127.0.0.1@tcp:1:/x "$T/mnt" -f 2>&1)
grep -qF "$T/client.conf:3: unknown key 'timout' in [client]" <<< "$out" || fail "bad [client] key: $out"

if [[ $fails -ne 0 ]]; then
  echo "---- syslog.txt" >&2; cat "$T/syslog.txt" >&2
  echo "$fails failure(s)" >&2
  exit 1
fi
echo "config_daemon_test: OK"
