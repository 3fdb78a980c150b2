#!/usr/bin/env bash
# The manual pages against the binaries they describe (no cluster needed):
# - every binary answers --version with "NAME VERSION (Stria)", VERSION the project's;
# - each page's .TH names that version;
# - each page names every long option of its binary's --help (stria-mds, stria-oss,
#   stria-fuse, mount.stria) or every command of its help (lfs help, lctl --help), so an
#   option added to a binary without its page fails here;
# - stria.conf(5) and dist/stria.conf name every config key of stria-mds and stria-oss;
# - groff renders each page without a warning (-ww), where groff is installed.
# Usage: man_test.sh BIN_DIR MAN_DIR VERSION
set -uo pipefail
BIN=${1:?usage: man_test.sh BIN_DIR MAN_DIR VERSION}
MAN=${2:?usage: man_test.sh BIN_DIR MAN_DIR VERSION}
VERSION=${3:?usage: man_test.sh BIN_DIR MAN_DIR VERSION}
fails=0
fail() {
  echo "FAIL: $*" >&2
  fails=$((fails + 1))
}

for b in stria-mds stria-oss stria-fuse mount.stria lfs lctl; do
  out=$("$BIN/$b" --version 2>&1)
  rc=$?
  [[ $rc -eq 0 ]] || fail "$b --version exited $rc: $out"
  [[ "$out" == "$b $VERSION (Stria)" ]] || fail "$b --version printed '$out', want '$b $VERSION (Stria)'"
done

# page_names PAGE WORD...: each WORD must appear in PAGE (roff: '-' written '\-').
page_names() {
  local page=$1 word roff
  shift
  for word in "$@"; do
    roff=${word//-/\\-}
    grep -qF -- "$roff" "$MAN/$page" || fail "$page does not document '$word'"
  done
}
long_options() { "$BIN/$1" --help 2>&1 | grep -oE -- '--[a-z0-9][a-z0-9-]*' | sort -u; }

for b in stria-mds stria-oss; do
  mapfile -t opts < <(long_options "$b")
  [[ ${#opts[@]} -ge 5 ]] || fail "$b --help lists ${#opts[@]} long options"
  page_names "$b.8" "${opts[@]}" --version
done
mapfile -t opts < <( (long_options stria-fuse; long_options mount.stria) | sort -u)
page_names mount.stria.8 "${opts[@]}" --version -o
# mount.stria's short flags, one per line of its --help.
mapfile -t flags < <("$BIN/mount.stria" --help 2>&1 | grep -oE '^  -[a-z] ' | tr -d ' ')
page_names mount.stria.8 "${flags[@]}"
mapfile -t cmds < <("$BIN/lfs" help 2>&1 | sed -n 's/^  \([a-z_]\{2,\}\)\(, \([a-z_]*\)\)\{0,1\} .*/\1 \3/p' | tr ' ' '\n' | grep .)
[[ ${#cmds[@]} -ge 10 ]] || fail "lfs help lists ${#cmds[@]} commands"
page_names lfs.1 "${cmds[@]}"
mapfile -t cmds < <("$BIN/lctl" --help 2>&1 | sed -n 's/^  \([a-z_]\{2,\}\) .*/\1/p')
[[ ${#cmds[@]} -ge 8 ]] || fail "lctl --help lists ${#cmds[@]} commands"
page_names lctl.8 "${cmds[@]}" --mgs --lnet-fallback --device deactivate activate --version

# stria.conf(5) and the sample dist/stria.conf name every key of [mds] and [oss]: each long
# option of the daemon but --help, --version, --config, --instance and the command-line-only
# testing options (kCommandLineOnlyGroup: --simulate-power-loss), '-' written '_'.
for b in stria-mds stria-oss; do
  mapfile -t keys < <(long_options "$b" |
                      grep -vxE -- '--(help|version|config|instance|simulate-power-loss)' |
                      sed 's/^--//; s/-/_/g')
  [[ ${#keys[@]} -ge 10 ]] || fail "$b: only ${#keys[@]} config keys"
  for k in "${keys[@]}"; do
    grep -qF -- "$k" "$MAN/stria.conf.5" || fail "stria.conf.5 does not document key '$k' of $b"
    grep -qE -- "^# ?$k = " "$MAN/../dist/stria.conf" ||
      fail "dist/stria.conf has no (commented) line for key '$k' of $b"
  done
done

for page in lfs.1 lctl.8 mount.stria.8 stria-mds.8 stria-oss.8 stria.conf.5; do
  grep -q "^\.TH .* \"Stria $VERSION\" " "$MAN/$page" || fail "$page: .TH does not say Stria $VERSION"
done
grep -qx '.so man8/mount.stria.8' "$MAN/stria-fuse.8" || fail "stria-fuse.8 is not a link to mount.stria.8"

if command -v groff > /dev/null; then
  for page in lfs.1 lctl.8 mount.stria.8 stria-mds.8 stria-oss.8 stria.conf.5; do
    warnings=$(LC_ALL=C.UTF-8 groff -man -Tascii -ww -z "$MAN/$page" 2>&1)
    [[ -z "$warnings" ]] || fail "groff warns on $page: $warnings"
    [[ $(LC_ALL=C.UTF-8 groff -man -Tascii "$MAN/$page" 2>/dev/null | wc -l) -gt 20 ]] ||
      fail "$page renders to almost nothing"
  done
else
  echo "groff is not installed (scripts/install-deps.sh installs groff-base): pages not rendered"
fi

if [[ $fails -ne 0 ]]; then
  echo "$fails failure(s)" >&2
  exit 1
fi
echo "man pages and --version: OK"
