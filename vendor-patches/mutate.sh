#!/usr/bin/env bash
# mutate.sh replays the mutation table of vendor-patches/README.md: for each row it
# injects one fault, runs the test(s) the table names, expects them to fail with
# the named failure, and restores. It exits non-zero if any fault is not caught.
#
#   mutate.sh            every row
#   mutate.sh 06 env     only the rows whose fault name contains one of the words
#
# Faults:
# - faults/NN-*.patch against the kubevirt tree (a/pkg/...): applied by run.sh
#   (MIGRANET_VP_FAULT) on top of the v1.9.0 series (NN-*.v1.8.4.patch: the v1.8.4
#   one) in a work dir of its own, which .work/kubevirt (-v1.8.4) points at while
#   the row runs; run.sh apply restores the link.
# - faults/NN-*.patch against this repository (a/vendor-patches/...): a fault in
#   the harness's own wiring, applied to the work tree with git apply and reverted
#   with git apply -R (also on exit or interrupt).
# - env:* rows: a prerequisite taken away (a failing "ip netns add", no QEMU on
#   PATH, an unprivileged user), and the one opt-out, which must skip instead.
#
# Each row prints "caught", "MISSED" or "BROKEN" (the fault did not apply or
# build) with its seconds; the summary is the README's table.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
build_p="${MIGRANET_VP_BUILD_P:-2}"
tmp=$(mktemp -d)
chmod 755 "$tmp"
applied_harness_fault=""

realip=$(command -v ip)
# A fake "ip" for the env rows: "ip netns add" refused, as for a user without
# CAP_SYS_ADMIN; every other command is the real one.
mkdir -p "$tmp/fakeip"
cat > "$tmp/fakeip/ip" <<EOF
#!/bin/sh
if [ "\$1" = netns ] && [ "\$2" = add ]; then
  echo "mount --make-shared /run/netns failed: Operation not permitted" >&2
  exit 1
fi
exec $realip "\$@"
EOF
chmod 755 "$tmp/fakeip/ip"

# fault | package | -test.run | failure expected in the output (extended regex)
rows=(
  "01-tls-byte-flip|migration|^TestQEMUMigrationThroughProxies\$/^mTLS\$|guest memory differs after the migration"
  "01-tls-byte-flip|migration|^TestQEMUMultifdThroughProxies\$|guest memory differs after the migration"
  "02-no-client-cert-check|proxy|^TestMTLSRefusesStrangers\$|no client certificate: server let the client in"
  "02-no-client-cert-check|migration|^TestQEMUMigrationThroughProxies\$/^mTLS\$|no client certificate: server let the client in"
  "03-any-ca-accepted|proxy|^TestMTLSRefusesStrangers\$|certificate from a foreign CA: server let the client in"
  "04-any-cn-accepted|proxy|^TestMTLSRefusesStrangers\$|wrong identity \\(CN\\): server let the client in"
  "05-failed-handshake-left-open|proxy|^TestMTLSRefusesStrangers\$|after refused clients: leaked"
  "06-outbound-leg-never-closed|proxy|^TestHalfCloseAndNoLeak\$|after a completed stream: leaked"
  "06-outbound-leg-never-closed|migration|^TestQEMUMigrationAborted\$/^cancelled\$|node after the abort: leaked"
  "07-from-target-not-counted|proxy|^TestHalfCloseAndNoLeak\$|metric (source|target)/from_target/49152 = 0, want 3"
  "07-from-target-not-counted|migration|^TestQEMUMigrationThroughProxies\$/^plain\$|proxy metric from_target = 0 bytes"
  "08-target-counts-twice|proxy|^TestHalfCloseAndNoLeak\$|metric target/to_target/49152 = [0-9.e+]+, want 8388608"
  "08-target-counts-twice|migration|^TestQEMUMigrationThroughProxies\$/^plain\$|proxy metric to_target: source counted"
  "09-series-not-deleted|proxy|^TestHalfCloseAndNoLeak\$|metric series of vmi-[0-9a-f]+ after stop"
  "09-series-not-deleted|migration|^TestQEMUMigrationAborted\$/^killed\$|still exports vmi-killed-[0-9a-f]+'s metric series"
  "10-full-close-not-half-close|proxy|^TestHalfCloseAndNoLeak\$|the backend cannot answer after the client's half-close"
  "11-stream-over-management-link|migration|^TestQEMUMigrationThroughProxies\$/^plain\$|management link source TX carried [0-9]+ bytes during the migration"
  "14-plain-copied-through-user-space|migration|^TestQEMUMigrationThroughProxies\$/^plain\$|source proxy copied [0-9]+ bytes through user space"
  "15-plain-byte-flip|migration|^TestQEMUMigrationThroughProxies\$/^plain\$|guest memory differs after the migration"
  "16-launcher-socket-symlinks-followed|proxy|^TestTargetRefusesLauncherSymlinks\$|the target proxy dialled through the planted symlink"
  "12-virt-handler-binds-pod-address.v1.8.4|wiring|^TestMigrationProxyBindsTheAdvertisedAddress\$|target listener not reachable on the advertised address 192.168.100.7"
  "13-kubevirt-tls-identity-unchecked.v1.8.4|wiring|^TestKubeVirtTLSConfigsRefuseStrangers\$|wrong identity \\(CN\\): server let the client in"
  "17-launcher-socket-symlinks-followed.v1.8.4|wiring|^TestMigrationTargetRefusesLauncherSymlinks\$|the target proxy dialled through the planted symlink"
  "18-launcher-sockets-through-var-run.v1.8.4|wiring|^TestMigrationTargetRefusesLauncherSymlinks\$|the launcher's real socket [^ ]+ got \"\""
  "env:netns-add-fails|migration|^TestQEMUMigrationThroughProxies\$|prerequisite missing: the privilege to create network namespaces \\(run as root / with CAP_SYS_ADMIN"
  "env:unprivileged-user|migration|^TestQEMUMigrationThroughProxies\$|prerequisite missing: the privilege to create network namespaces"
  "env:unprivileged-user|wiring|^TestMigrationProxyBindsTheAdvertisedAddress\$|prerequisite missing: the privilege to create network namespaces"
  "env:no-qemu|migration|^TestQEMUMigrationThroughProxies\$|prerequisite missing: qemu-system-x86_64 \\(apt-get install"
  "env:opt-out-skips|migration|^TestQEMUMigrationThroughProxies\$|skipped by the opt-out: MIGRANET_TEST_SKIP lists qemu"
)

say() { echo "mutate: $*" >&2; }

restore() {
  if [ -n "$applied_harness_fault" ]; then
    (cd "$repo" && git apply -R "$applied_harness_fault") || say "could not revert $applied_harness_fault: revert it by hand"
    applied_harness_fault=""
  fi
}
cleanup() {
  restore
  (cd "$here" && bash run.sh apply >/dev/null 2>&1) || say "run.sh apply failed while restoring .work/kubevirt"
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# build PACKAGE: the package's test binary for the current tree, in $tmp.
build() {
  if [ "$1" = wiring ]; then
    (cd "$here/virt-handler-v1.8.4" && CGO_ENABLED=1 go test -c -p "$build_p" -o "$tmp/$1.test" ./wiring)
  else
    (cd "$here/harness" && go test -c -p "$build_p" -o "$tmp/$1.test" "./$1")
  fi
}

# pkgdir PACKAGE: where its tests run.
pkgdir() {
  if [ "$1" = wiring ]; then echo "$here/virt-handler-v1.8.4/wiring"; else echo "$here/harness/$1"; fi
}

# prepare_fault FAULT: the tree with FAULT in (or nothing for env rows).
prepare_fault() {
  local f="$1" patch="$here/faults/$1.patch"
  case "$f" in
    env:*) (cd "$here" && bash run.sh apply >/dev/null 2>&1) ;;
    *)
      [ -f "$patch" ] || { say "no $patch"; return 1; }
      if grep -q '^--- a/vendor-patches/' "$patch"; then
        (cd "$here" && bash run.sh apply >/dev/null 2>&1) || return 1
        (cd "$repo" && git apply "$patch") || return 1
        applied_harness_fault="$patch"
      else
        local version=v1.9.0
        [[ "$f" == *.v1.8.4 ]] && version=v1.8.4
        (cd "$here" && MIGRANET_VP_FAULT="$patch" MIGRANET_VP_FAULT_VERSION=$version bash run.sh apply >"$tmp/apply.log" 2>&1) ||
          { cat "$tmp/apply.log" >&2; return 1; }
      fi
      ;;
  esac
}

# run_row FAULT PACKAGE RUN: runs the named tests with the fault's environment;
# output in $tmp/out, exit status returned.
run_row() {
  local f="$1" pkg="$2" run="$3" bin="$tmp/$2.test" dir
  dir=$(pkgdir "$pkg")
  local args=(-test.run "$run" -test.count 1 -test.timeout 5m -test.v)
  case "$f" in
    env:netns-add-fails)
      (cd "$dir" && PATH="$tmp/fakeip:$PATH" "$bin" "${args[@]}") >"$tmp/out" 2>&1 ;;
    env:unprivileged-user)
      # A real unprivileged run: user nobody, no capabilities.
      (cd "$tmp" && setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all \
        env -u MIGRANET_TEST_SKIP HOME=/nonexistent "$bin" "${args[@]}") >"$tmp/out" 2>&1 ;;
    env:no-qemu)
      # PATH with every tool the suite uses but QEMU, and an "ip netns add" that
      # is refused as well: QEMU must be named first.
      mkdir -p "$tmp/noqemu"
      for t in as ld; do ln -sf "$(command -v "$t")" "$tmp/noqemu/$t"; done
      ln -sf "$tmp/fakeip/ip" "$tmp/noqemu/ip"
      (cd "$dir" && PATH="$tmp/noqemu" "$bin" "${args[@]}") >"$tmp/out" 2>&1 ;;
    env:opt-out-skips)
      (cd "$dir" && MIGRANET_TEST_SKIP=bench,qemu "$bin" "${args[@]}") >"$tmp/out" 2>&1 ;;
    *)
      (cd "$dir" && "$bin" "${args[@]}") >"$tmp/out" 2>&1 ;;
  esac
}

rc=0
results=()
current=""
for row in "${rows[@]}"; do
  IFS='|' read -r fault pkg run expect <<<"$row"
  if [ $# -gt 0 ]; then
    want=0
    for w in "$@"; do [[ "$fault" == *"$w"* ]] && want=1; done
    [ $want = 1 ] || continue
  fi
  start=$SECONDS
  if [ "$fault" != "$current" ]; then
    restore
    current=""
    if ! prepare_fault "$fault"; then
      results+=("BROKEN | $fault | $pkg $run | the fault does not apply")
      rc=1
      continue
    fi
    current="$fault"
    rm -f "$tmp"/*.test
  fi
  if [ ! -x "$tmp/$pkg.test" ] && ! build "$pkg" >"$tmp/build.log" 2>&1; then
    cat "$tmp/build.log" >&2
    results+=("BROKEN | $fault | $pkg $run | does not build")
    rc=1
    continue
  fi
  run_row "$fault" "$pkg" "$run"
  status=$?
  secs=$((SECONDS - start))
  if [ "$fault" = env:opt-out-skips ]; then
    # The opt-out is no fault: the run passes, every QEMU test skipped, saying why.
    if [ $status = 0 ] && grep -Eq -- "$expect" "$tmp/out" && grep -q -- '--- SKIP' "$tmp/out" && ! grep -q -- '--- PASS' "$tmp/out"; then
      verdict=skipped
    else
      verdict=MISSED
    fi
  elif [ $status != 0 ] && grep -Eq -- "$expect" "$tmp/out"; then
    verdict=caught
  else
    verdict=MISSED
  fi
  if [ "$verdict" = MISSED ]; then
    rc=1
    say "$fault: $pkg $run: exit $status, expected /$expect/; output tail:"
    grep -v '^{"component' "$tmp/out" | tail -25 >&2
  fi
  line=$(grep -Eo -m1 -- "$expect" "$tmp/out" || true)
  results+=("$verdict | $fault | $pkg $run | ${secs}s | $line")
  say "$verdict: $fault ($pkg $run) ${secs}s"
done
restore

echo "verdict | fault | caught by | seconds | failure seen"
for r in "${results[@]}"; do echo "$r"; done
[ $rc = 0 ] && say "every fault caught" || say "SOME FAULTS NOT CAUGHT"
exit $rc
