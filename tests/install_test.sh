#!/usr/bin/env bash
# What `cmake --install` and the Debian package put on a host (docs/operations.md,
# "Installing"), checked in a DESTDIR and in the .deb, without touching this host:
#
#   install_test.sh install BUILD_DIR SRC_DIR   cmake --install into a DESTDIR: every binary,
#       the library, man pages, completions, units, config land where they should; lfs and
#       lctl only under Stria's names (and as links with STRIA_INSTALL_LUSTRE_NAMES=1); the
#       installed binaries run; the units pass systemd-analyze verify; the completions offer
#       every command of lfs help / lctl --help.
#   install_test.sh deb BUILD_DIR SRC_DIR       cpack -G DEB, then dpkg-deb: the same files in
#       the package, the conffile, the maintainer scripts and the dependencies.
set -uo pipefail
MODE=${1:?usage: install_test.sh install|deb BUILD_DIR SRC_DIR}
BUILD=${2:?}
SRC=${3:?}
VERSION=$(sed -n 's/^project(stria VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
T=$(mktemp -d /tmp/stria-install-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
fail() {
  echo "FAIL: $*" >&2
  fails=$((fails + 1))
}

# The files every install has, relative to the root, for prefix /usr.
EXPECTED=(
  usr/sbin/stria-mds usr/sbin/stria-oss usr/sbin/stria-lctl
  usr/bin/stria-fuse usr/bin/stria-lfs
  sbin/mount.stria
  usr/lib/libstria.so.1 usr/include/stria/stria.h usr/lib/pkgconfig/stria.pc
  usr/share/man/man1/stria-lfs.1 usr/share/man/man8/stria-lctl.8
  usr/share/man/man8/stria-mds.8 usr/share/man/man8/stria-oss.8
  usr/share/man/man8/mount.stria.8 usr/share/man/man8/stria-fuse.8
  usr/share/man/man5/stria.conf.5
  usr/share/bash-completion/completions/stria-lfs
  usr/share/bash-completion/completions/stria-lctl
  usr/lib/systemd/system/stria-mds.service usr/lib/systemd/system/stria-oss@.service
  etc/stria/stria.conf
)
# Names a Lustre client owns: never installed by default.
LUSTRE_NAMES=(usr/bin/lfs usr/sbin/lctl usr/share/man/man1/lfs.1 usr/share/man/man8/lctl.8
              usr/share/bash-completion/completions/lfs usr/share/bash-completion/completions/lctl)

check_tree() {  # check_tree ROOT WHAT
  local root=$1 what=$2 f
  for f in "${EXPECTED[@]}"; do
    [[ -e "$root/$f" || -L "$root/$f" ]] || fail "$what: /$f is missing"
  done
  for f in "${LUSTRE_NAMES[@]}"; do
    [[ ! -e "$root/$f" && ! -L "$root/$f" ]] || fail "$what: /$f is installed (shadows Lustre's)"
  done
  [[ "$(readlink "$root/sbin/mount.stria")" == /usr/bin/stria-fuse ]] ||
    fail "$what: /sbin/mount.stria -> '$(readlink "$root/sbin/mount.stria")', want /usr/bin/stria-fuse"
  grep -qx 'ExecStart=/usr/sbin/stria-mds --config /etc/stria/stria.conf' \
    "$root/usr/lib/systemd/system/stria-mds.service" || fail "$what: stria-mds.service ExecStart"
  grep -qx 'ExecStart=/usr/sbin/stria-oss --config /etc/stria/stria.conf --instance %i' \
    "$root/usr/lib/systemd/system/stria-oss@.service" || fail "$what: stria-oss@.service ExecStart"
  cmp -s "$root/etc/stria/stria.conf" "$SRC/dist/stria.conf" || fail "$what: /etc/stria/stria.conf differs"
}

# completions ROOT: the completion functions offer what the binaries have.
check_completions() {
  local root=$1 bin=$2 out
  complete_words() {  # complete_words FILE WORD... -> the candidates for the last word
    bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*";
             f=$(complete -p "$1" | sed -n "s/.*-F \([^ ]*\) .*/\1/p"); "$f"; printf "%s\n" "${COMPREPLY[@]}"' \
      _ "$@"
  }
  local lfsc="$root/usr/share/bash-completion/completions/stria-lfs"
  local lctlc="$root/usr/share/bash-completion/completions/stria-lctl"
  bash -c "source '$lfsc'; complete -p lfs && complete -p stria-lfs" > /dev/null ||
    fail "stria-lfs completion does not register lfs and stria-lfs"
  bash -c "source '$lctlc'; complete -p lctl && complete -p stria-lctl" > /dev/null ||
    fail "stria-lctl completion does not register lctl and stria-lctl"
  local cmds c
  mapfile -t cmds < <("$bin/lfs" help 2>&1 | sed -n 's/^  \([a-z_]\{2,\}\)\(, \([a-z_]*\)\)\{0,1\} .*/\1 \3/p' | tr ' ' '\n' | grep .)
  [[ ${#cmds[@]} -ge 10 ]] || fail "lfs help lists ${#cmds[@]} commands"
  out=$(complete_words "$lfsc" lfs "")
  for c in "${cmds[@]}"; do grep -qx "$c" <<< "$out" || fail "lfs completion lacks command $c"; done
  out=$(complete_words "$lfsc" lfs getstripe --stripe-)
  for c in --stripe-count --stripe-size --stripe-index; do
    grep -qx -- "$c" <<< "$out" || fail "lfs getstripe --stripe- does not offer $c: $out"
  done
  [[ "$(complete_words "$lfsc" lfs find /mnt --type "")" == $'f\nd\nl' ]] || fail "lfs find --type values"
  mapfile -t cmds < <("$bin/lctl" --help 2>&1 | sed -n 's/^  \([a-z_]\{2,\}\) .*/\1/p')
  [[ ${#cmds[@]} -ge 8 ]] || fail "lctl --help lists ${#cmds[@]} commands"
  out=$(complete_words "$lctlc" lctl --mgs 10.0.0.1@tcp "")
  for c in "${cmds[@]}"; do grep -qx "$c" <<< "$out" || fail "lctl completion lacks command $c"; done
  [[ "$(complete_words "$lctlc" lctl --lnet-fallback "")" == $'tcp\nnone' ]] || fail "lctl --lnet-fallback values"
  [[ "$(complete_words "$lctlc" lctl set_param osc.*.che)" == 'osc.*.checksums=' ]] ||
    fail "lctl set_param osc.*.che: '$(complete_words "$lctlc" lctl set_param osc.*.che)'"
  [[ "$(complete_words "$lctlc" lctl --device 3 "")" == $'deactivate\nactivate' ]] || fail "lctl --device N values"
  [[ "$(complete_words "$lctlc" lctl dl -)" == '-t' ]] || fail "lctl dl options"
}

case "$MODE" in
install)
  D="$T/root"
  if ! DESTDIR="$D" cmake --install "$BUILD" --prefix /usr > "$T/install.log" 2>&1; then
    cat "$T/install.log" >&2
    fail "cmake --install failed"
  fi
  check_tree "$D" "cmake --install"
  # The installed programs run, and say what they are.
  out=$("$D/usr/sbin/stria-mds" --version 2>&1)
  [[ "$out" == "stria-mds $VERSION (Stria)" ]] || fail "installed stria-mds --version: $out"
  out=$("$D/usr/bin/stria-lfs" --version 2>&1)
  [[ "$out" == "lfs $VERSION (Stria)" ]] || fail "installed stria-lfs --version: $out"
  out=$("$D/usr/sbin/stria-lctl" --version 2>&1)
  [[ "$out" == "lctl $VERSION (Stria)" ]] || fail "installed stria-lctl --version: $out"
  # libstria.so.1 is a real library exporting the C API.
  nm -D --defined-only "$D/usr/lib/libstria.so.1" | grep -Eq ' T stria_connect(@@STRIA_1)?$' ||
    fail "installed libstria.so.1 does not export stria_connect"
  # A second install keeps an admin's edited config.
  echo '# edited' >> "$D/etc/stria/stria.conf"
  DESTDIR="$D" cmake --install "$BUILD" --prefix /usr > "$T/install2.log" 2>&1 || fail "second install"
  grep -q '^# edited$' "$D/etc/stria/stria.conf" || fail "a second install overwrote /etc/stria/stria.conf"
  # The Lustre names only when asked for, as relative links.
  L="$T/lustre"
  STRIA_INSTALL_LUSTRE_NAMES=1 DESTDIR="$L" cmake --install "$BUILD" --prefix /usr > "$T/install3.log" 2>&1 ||
    fail "install with STRIA_INSTALL_LUSTRE_NAMES=1"
  [[ "$(readlink "$L/usr/bin/lfs")" == stria-lfs ]] || fail "STRIA_INSTALL_LUSTRE_NAMES: usr/bin/lfs"
  [[ "$(readlink "$L/usr/sbin/lctl")" == stria-lctl ]] || fail "STRIA_INSTALL_LUSTRE_NAMES: usr/sbin/lctl"
  [[ "$(readlink "$L/usr/share/man/man1/lfs.1")" == stria-lfs.1 ]] || fail "STRIA_INSTALL_LUSTRE_NAMES: lfs.1"
  [[ "$("$L/usr/bin/lfs" --version 2>&1)" == "lfs $VERSION (Stria)" ]] || fail "linked lfs does not run"
  check_completions "$D" "$BUILD/bin"
  # The units, as systemd reads them (their ExecStart pointed at the DESTDIR copies).
  if command -v systemd-analyze > /dev/null; then
    V="$T/units"
    mkdir -p "$V"
    sed "s|ExecStart=/usr/|ExecStart=$D/usr/|" "$D/usr/lib/systemd/system/stria-mds.service" > "$V/stria-mds.service"
    sed "s|ExecStart=/usr/|ExecStart=$D/usr/|" "$D/usr/lib/systemd/system/stria-oss@.service" > "$V/stria-oss@nvme0.service"
    # The mount unit of docs/operations.md for /mnt/training-data.
    printf '[Unit]\nDescription=Stria training filesystem\nWants=network-online.target\nAfter=network-online.target\n[Mount]\nWhat=10.0.0.10@tcp:9880:/training\nWhere=/mnt/training-data\nType=stria\nOptions=_netdev\n[Install]\nWantedBy=remote-fs.target\n' \
      > "$V/mnt-training\\x2ddata.mount"
    for u in "$V/stria-mds.service" "$V/stria-oss@nvme0.service" "$V/mnt-training\\x2ddata.mount"; do
      # MANPATH: Documentation=man:... must name installed pages.
      out=$(MANPATH="$D/usr/share/man" systemd-analyze verify "$u" 2>&1)
      rc=$?
      # Ignore complaints about units of this host that ours do not touch.
      out=$(grep -v -e '^/\(usr/\)\{0,1\}lib/systemd/' -e '^/etc/systemd/' <<< "$out")
      [[ $rc -eq 0 && -z "$out" ]] || fail "systemd-analyze verify $(basename "$u") (rc $rc): $out"
    done
  else
    echo "systemd-analyze is not installed: units not verified"
  fi
  ;;
deb)
  rm -rf "$BUILD/packages"
  if ! (cd "$BUILD" && cpack -G DEB > "$T/cpack.log" 2>&1); then
    tail -40 "$T/cpack.log" >&2
    fail "cpack -G DEB failed"
  fi
  deb=$(ls "$BUILD"/packages/stria_"$VERSION"_*.deb 2>/dev/null | head -n 1)
  if [[ -z "$deb" ]]; then
    fail "no stria_${VERSION}_*.deb in $BUILD/packages"
  else
    dpkg-deb -c "$deb" > "$T/contents" || fail "dpkg-deb -c $deb"
    X="$T/x"
    dpkg-deb -x "$deb" "$X" || fail "dpkg-deb -x"
    check_tree "$X" "$(basename "$deb")"
    # Paths as dpkg lists them (./usr/sbin/stria-mds), the binaries stripped and running.
    grep -q ' \./usr/sbin/stria-mds$' "$T/contents" || fail "dpkg-deb -c does not list ./usr/sbin/stria-mds"
    readelf -S "$X/usr/sbin/stria-mds" | grep -q '\.debug_info' && fail "stria-mds is not stripped"
    [[ "$("$X/usr/sbin/stria-oss" --version 2>&1)" == "stria-oss $VERSION (Stria)" ]] || fail "packaged stria-oss does not run"
    C="$T/control"
    dpkg-deb -e "$deb" "$C" || fail "dpkg-deb -e"
    grep -qx '/etc/stria/stria.conf' "$C/conffiles" || fail "stria.conf is not a conffile"
    grep -q 'update-alternatives --install /usr/bin/lfs lfs /usr/bin/stria-lfs 10' "$C/postinst" ||
      fail "postinst does not register lfs as an alternative"
    grep -q 'update-alternatives --remove lctl /usr/sbin/stria-lctl' "$C/prerm" || fail "prerm keeps the lctl alternative"
    for s in postinst prerm postrm; do
      [[ -x "$C/$s" ]] || fail "$s is not executable"
      sh -n "$C/$s" || fail "$s: syntax"
    done
    depends=$(dpkg-deb -f "$deb" Depends)
    for dep in fuse3 libfuse3 liburing libtomlplusplus libprotobuf libjemalloc; do
      grep -q "$dep" <<< "$depends" || fail "Depends lacks $dep: $depends"
    done
    [[ "$(dpkg-deb -f "$deb" Package)" == stria ]] || fail "package name"
    echo "$(basename "$deb"): $(wc -l < "$T/contents") entries, Depends: $depends"
  fi
  ;;
*)
  echo "usage: install_test.sh install|deb BUILD_DIR SRC_DIR" >&2
  exit 2
  ;;
esac

if [[ $fails -ne 0 ]]; then
  echo "$fails failure(s)" >&2
  exit 1
fi
echo "install_test $MODE: OK"
