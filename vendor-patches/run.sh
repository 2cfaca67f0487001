#!/usr/bin/env bash
# vendor-patches entry point: apply the migranet patch series to KubeVirt v1.9.0 and
# v1.8.4 (both taken from the Go module cache), build the patched packages and the
# whole patched v1.8.4 virt-handler, run upstream's tests of the touched packages,
# run the harness and the benchmarks.
#
#   run.sh apply          resolve kubevirt.io/kubevirt v1.9.0 and v1.8.4, apply each
#                         release's series into a work dir outside the tree, build
#                         the patched packages
#   run.sh virt-handler   apply if needed, then build the patched v1.8.4 virt-handler
#                         binary (CGO_ENABLED=1) and print its path
#   run.sh upstream       apply if needed, then upstream's unit tests of the touched
#                         packages that compile, for both releases
#   run.sh test           upstream, then the harness tests (loopback + netns/QEMU suite)
#                         and virt-handler-v1.8.4/wiring; per package: tests ran,
#                         passed, failed, skipped; test2json streams kept in
#                         $MIGRANET_TEST_RESULTS (vendor-patches--<pkg>.json)
#   run.sh lab-proxy      apply the v1.9.0 series if needed, build harness/labproxy (the
#                         patched migration proxy as one lab node's virt-handler runs
#                         it, for make dev and the suites) and print its path; cached
#                         by series, harness sources and Go version
#   run.sh rebase-check RELEASE [--tree DIR] [--series SERIES]
#                         does the series apply to another release (from the module
#                         proxy, or the kubevirt tree DIR)? per patch OK or the hunks
#                         that need work; whether the release has upstream's fix of
#                         CVE-2026-13622 (then 0011 is dropped). See rebase-check.sh.
#                         "rebase-check --self-test": its checks of run.sh test
#   run.sh bench          print "bench proxy: ..." lines (patched vs direct vs upstream,
#                         and vs the floor: floor/splicefloor.c, the cheapest relay),
#                         per mode (shared cores, per-node CPUs, proxies alone), with
#                         each goal met or missed. MIGRANET_VP_BENCH picks the
#                         benchmarks (-test.bench regexp, e.g. ProxyThroughput),
#                         MIGRANET_VP_BENCH_MODES the modes (shared,pernode,alone,
#                         alone-pernode), MIGRANET_VP_BENCH_PROCS the Go nodes'
#                         GOMAXPROCS in the spare-core modes (16)
#
# MIGRANET_VP_FAULT (used by mutate.sh) names one fault patch (faults/*.patch) applied
# to the v1.9.0 tree (MIGRANET_VP_FAULT_VERSION: another release's) on top of the
# series.
#
# MIGRANET_VP_PATCHES selects the series: "all" (default), "none", a comma list of
# patch numbers ("1,2"), or "all" less some ("all,-11": the series without 0011).
# Anything but "all" is for showing that the harness fails without the patches;
# the harness then builds with -tags vp_unpatched unless every patch but 0011 is
# selected (the patched constructor and metrics are missing), and with -tags
# vp_unsafe_dial unless 0011 is (the proxy takes launcher sockets by plain path).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# kv_version is the harness's release: its go.mod needs kubevirt.io/virt-template-*
# v0.2.0, refused by the module proxy, so harness/stubs stand in and only the
# packages that do not import them build. handler_version is the newest release
# whose whole module graph the proxy serves: its virt-handler builds.
kv_version=v1.9.0
handler_version=v1.8.4
# v1.8 needs kubevirt.io/virt-template-* v0.1.7 and github.com/rhobs/...: served by the
# module proxy, not answered for by the checksum database (go.sum pins what was fetched).
export GONOSUMDB=${GONOSUMDB:+$GONOSUMDB,}kubevirt.io,github.com/rhobs
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/migranet/vendor-patches"
handler_module="$here/virt-handler-$handler_version"
# Compiles run with -p build_p (2 cores in CI); test binaries then run one at a
# time (-p 1): the QEMU suite and the loopback leak checks must not share the CPU.
build_p="${MIGRANET_VP_BUILD_P:-2}"
# Every go test carries a -timeout: a stuck test panics with all goroutine stacks
# instead of hanging CI.
upstream_timeout="${MIGRANET_VP_UPSTREAM_TIMEOUT:-5m}"
harness_timeout="${MIGRANET_VP_HARNESS_TIMEOUT:-8m}"
bench_timeout="${MIGRANET_VP_BENCH_TIMEOUT:-15m}"

die() { echo "vendor-patches: $*" >&2; exit 1; }
say() { echo "vendor-patches: $*" >&2; }

# patch_selected N: whether MIGRANET_VP_PATCHES selects patch number N.
patch_selected() {
  local sel=",${MIGRANET_VP_PATCHES:-all},"
  [[ "$sel" == *",-$1,"* ]] && return 1
  [[ "$sel" == *",all,"* || "$sel" == *",$1,"* ]]
}

selected_patches() { # VERSION
  local p n
  for p in "$here/kubevirt-$1"/[0-9][0-9][0-9][0-9]-*.patch; do
    [ -e "$p" ] || continue
    n=$((10#$(basename "$p" | cut -c1-4)))
    if patch_selected "$n"; then echo "$p"; fi
  done
  # mutate.sh: one deliberate fault (faults/*.patch against the kubevirt tree) on
  # top of the harness release's series, in a work dir of its own.
  if [ -n "${MIGRANET_VP_FAULT:-}" ] && [ "$1" = "${MIGRANET_VP_FAULT_VERSION:-$kv_version}" ]; then
    echo "$MIGRANET_VP_FAULT"
  fi
}

series_hash() { # VERSION
  { echo "$1"; selected_patches "$1" | while read -r p; do basename "$p"; cat "$p"; done; } |
    sha256sum | cut -c1-12
}

# prepare VERSION MODULE LINK: pristine module (resolved from MODULE, whose go.sum
# pins it) -> writable copy -> git apply --check -> git apply, in a work dir keyed by
# the series' hash, linked at .work/LINK (which MODULE's go.mod replaces
# kubevirt.io/kubevirt with).
prepare() {
  local version="$1" module="$2" link="$3" hash wd src tmp p
  hash=$(series_hash "$version")
  wd="$cache_root/kubevirt-$version-$hash"
  if [ ! -f "$wd/.migranet-applied" ]; then
    src=$(cd "$module" && GOFLAGS=-mod=mod go mod download -json "kubevirt.io/kubevirt@$version" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -n "$src" ] && [ -d "$src" ] || die "kubevirt.io/kubevirt@$version not resolved through the module proxy"
    mkdir -p "$cache_root"
    tmp=$(mktemp -d "$cache_root/.tmp-XXXXXX")
    cp -r "$src/." "$tmp/"
    chmod -R u+w "$tmp"
    while read -r p; do
      [ -n "$p" ] || continue
      # git apply never fuzzes: any context mismatch is a reject.
      (cd "$tmp" && git apply --check --verbose "$p" >/dev/null 2>"$tmp/.apply.err") ||
        { cat "$tmp/.apply.err" >&2; rm -rf "$tmp"; die "$version: patch does not apply cleanly: $(basename "$p")"; }
      (cd "$tmp" && git apply --whitespace=nowarn "$p") || { rm -rf "$tmp"; die "$version: apply failed: $(basename "$p")"; }
      say "$version: applied $(basename "$p")"
    done < <(selected_patches "$version")
    rm -f "$tmp/.apply.err"
    selected_patches "$version" | xargs -r -n1 basename > "$tmp/.migranet-applied"
    rm -rf "$wd"
    mv "$tmp" "$wd"
  fi
  mkdir -p "$here/.work"
  ln -sfn "$wd" "$here/.work/$link"
  say "kubevirt $version work dir: $wd ($(wc -l < "$wd/.migranet-applied") patches)"
}

# apply: both series, then the patched packages of each release.
cmd_apply() {
  command -v go >/dev/null || die "go not found"
  command -v git >/dev/null || die "git not found (git apply is used for the series)"
  prepare "$kv_version" "$here/harness" kubevirt
  prepare "$handler_version" "$handler_module" "kubevirt-$handler_version"
  (cd "$here/harness" && go build -p "$build_p" $(tags_flag) $(patched_packages) ./...)
  say "$kv_version: patched packages build"
  (cd "$handler_module" && CGO_ENABLED=1 go build -p "$build_p" $(handler_packages))
  say "$handler_version: patched packages build"
}

# The patched virt-handler of handler_version: node-labeller has cgo files, so
# CGO_ENABLED=1 (gcc). Written to the cache next to the work dirs, named by the
# series' hash, linked at .work/bin/virt-handler-VERSION.
cmd_virt_handler() {
  cmd_apply
  local out ldflags start=$SECONDS
  out="$cache_root/bin/virt-handler-$handler_version-$(series_hash "$handler_version")"
  ldflags="-s -w -X kubevirt.io/client-go/version.gitVersion=$handler_version -X kubevirt.io/client-go/version.gitTreeState=clean"
  mkdir -p "$cache_root/bin" "$here/.work/bin"
  if [ ! -x "$out" ]; then
    say "$handler_version: building the patched virt-handler (cold: about 3 minutes)"
    (cd "$handler_module" && CGO_ENABLED=1 go build -p "$build_p" -ldflags "$ldflags" -o "$out.tmp" \
      kubevirt.io/kubevirt/cmd/virt-handler) || die "$handler_version: virt-handler does not build"
    mv "$out.tmp" "$out"
    say "$handler_version: virt-handler built in $((SECONDS - start)) s"
  fi
  ln -sfn "$out" "$here/.work/bin/virt-handler-$handler_version"
  echo "$out"
}

# The lab's migration proxy (harness/labproxy): the patched v1.9.0 package as one
# node's virt-handler runs it, for make dev and the suites that move migrations'
# bytes (test/sim). Built like the harness's test binaries (same module, flags and
# work dir link), so its packages are the ones run.sh test compiles: whichever runs
# first compiles them, the other finds them in the build cache. The binary is kept
# in the cache, named by the series' hash and a hash of the harness's sources and
# go.sum and the Go version: a warm call builds nothing.
cmd_lab_proxy() {
  [ -z "$(tags_flag)" ] || die "lab-proxy needs the whole series (MIGRANET_VP_PATCHES=${MIGRANET_VP_PATCHES:-all})"
  command -v go >/dev/null || die "go not found"
  command -v git >/dev/null || die "git not found (git apply is used for the series)"
  prepare "$kv_version" "$here/harness" kubevirt
  local src out start=$SECONDS
  src=$( { go version; cd "$here/harness" && cat go.mod go.sum &&
    find . -name '*.go' ! -name '*_test.go' -not -path './stubs/*' | LC_ALL=C sort | xargs cat; } | sha256sum | cut -c1-12)
  out="$cache_root/bin/labproxy-$kv_version-$(series_hash "$kv_version")-$src"
  mkdir -p "$cache_root/bin" "$here/.work/bin"
  if [ ! -x "$out" ]; then
    say "$kv_version: building the lab's migration proxy (harness/labproxy; cold: the patched packages, about 5-10 minutes on 2 cores)"
    (cd "$here/harness" && go build -p "$build_p" -o "$out.tmp" ./labproxy) || die "labproxy does not build"
    mv "$out.tmp" "$out"
    say "$kv_version: labproxy built in $((SECONDS - start)) s"
  fi
  ln -sfn "$out" "$here/.work/bin/labproxy"
  echo "$out"
}

# The harness's build tags for the selected series: vp_unpatched (upstream's
# constructor, no proxy metrics) unless every patch but 0011 is selected,
# vp_unsafe_dial (launcher sockets by plain path) unless 0011 is.
tags_flag() {
  local p n tags=""
  for p in "$here/kubevirt-$kv_version"/[0-9][0-9][0-9][0-9]-*.patch; do
    n=$((10#$(basename "$p" | cut -c1-4)))
    [ "$n" = 11 ] || patch_selected "$n" || tags=vp_unpatched
  done
  patch_selected 11 || tags=${tags:+$tags,}vp_unsafe_dial
  if [ -n "$tags" ]; then echo "-tags=$tags"; fi
}

# harness_patched: the harness builds against the patched API (no vp_unpatched).
harness_patched() {
  [[ "$(tags_flag)" != *vp_unpatched* ]]
}

# The upstream packages the series touches that build for kv_version: the others
# (cmd/virt-handler, pkg/monitoring/metrics/virt-handler, pkg/virt-launcher/virtwrap)
# import the stubbed virt-template modules.
patched_packages() {
  echo kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy
  echo kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/api
}

# The upstream packages the series touches that build for handler_version (all but
# pkg/virt-launcher/virtwrap, which needs libguestfs.org/libnbd, refused by the
# module proxy, and libvirt's cgo bindings); cmd/virt-handler has no tests.
handler_packages() {
  echo kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy
  echo kubevirt.io/kubevirt/pkg/monitoring/metrics/virt-handler
  echo kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/api
  echo kubevirt.io/kubevirt/pkg/virt-handler
}

# test_args PKG: extra arguments of a package's test binary. pkg/virt-handler
# (touched by 0006's new file and 0011's migration-target.go) runs the specs of
# migration-target_test.go, which drive handleTargetMigrationProxy: its whole
# suite (230 specs in v1.8.4) takes about two minutes, mostly waiting.
test_args() {
  case "$1" in
    kubevirt.io/kubevirt/pkg/virt-handler) echo "-ginkgo.focus-file=migration-target_test.go" ;;
  esac
}

# bin_name PKG: the name of a package's test binary and results file: its base
# name, but pkg/virt-handler's is its Go package name (its base name is the
# metrics package's).
bin_name() {
  case "$1" in
    kubevirt.io/kubevirt/pkg/virt-handler) echo virthandler ;;
    *) basename "$1" ;;
  esac
}

# run_test_binaries MODULE DIR TIMEOUT PREFIX PKG...: runs each package's compiled
# test binary from DIR in the package's directory (tests read testdata relative to
# it), one at a time, with TIMEOUT, verbose (-test.v=test2json, streamed to the
# console), converts the stream with go tool test2json and prints, per package,
# how many tests (subtests included) ran, passed, failed and were skipped. The
# test2json stream is kept as PREFIX<package base name>.json in
# $MIGRANET_TEST_RESULTS (when set) or .work/testbin/results. Packages without
# tests have no binary and are left out.
run_test_binaries() {
  local module="$1" bindir="$2" timeout="$3" prefix="$4" rc=0 pkg dir bin start raw json status
  local ran passed failed skipped outdir="${MIGRANET_TEST_RESULTS:-$here/.work/testbin/results}"
  shift 4
  mkdir -p "$outdir"
  for pkg in "$@"; do
    dir=$(cd "$module" && go list $(tags_flag) -f '{{.Dir}}' "$pkg")
    bin="$bindir/$(bin_name "$pkg").test"
    [ -x "$bin" ] || continue
    raw="$bindir/$(bin_name "$pkg").test2json"
    json="$outdir/$prefix$(bin_name "$pkg").json"
    start=$(date +%s)
    status=0
    (cd "$dir" && "$bin" -test.v=test2json -test.timeout "$timeout" -test.count 1 $(test_args "$pkg") 2>&1 | tee "$raw" |
      sed -e 's/\x16//' -e 's/^/    /'; exit "${PIPESTATUS[0]}") || status=$?
    go tool test2json -t -p "$pkg" < "$raw" > "$json"
    ran=$(count_events run "$json"); passed=$(count_events pass "$json")
    failed=$(count_events fail "$json"); skipped=$(count_events skip "$json")
    if [ "$status" = 0 ] && [ "$failed" = 0 ]; then
      printf 'ok   %s %ss: %s ran, %s passed, %s failed, %s skipped\n' "$pkg" $(( $(date +%s) - start )) "$ran" "$passed" "$failed" "$skipped"
    else
      printf 'FAIL %s %ss: %s ran, %s passed, %s failed, %s skipped (exit %s)\n' "$pkg" $(( $(date +%s) - start )) "$ran" "$passed" "$failed" "$skipped" "$status"
      rc=1
    fi
    summary+=("$(basename "$json" .json) ($pkg): $ran ran, $passed passed, $failed failed, $skipped skipped")
  done
  return $rc
}

# count_events ACTION FILE: test2json events of ACTION that belong to a test.
count_events() {
  grep -c "\"Action\":\"$1\",\"Package\":\"[^\"]*\",\"Test\":" "$2" || true
}

# summary collects one line per package run, printed at the end of test/upstream.
summary=()
print_summary() {
  local l
  say "per package (tests and subtests):"
  for l in "${summary[@]}"; do say "  $l"; done
}

# upstream: compile the test binaries of the touched packages of both releases, then
# run them. The v1.8.4 ones compile with CGO_ENABLED=1, as virt-handler does, so the
# two share the build cache.
cmd_upstream() {
  cmd_apply
  local rc=0 pkg bindir="$here/.work/testbin"
  rm -rf "$bindir/upstream" "$bindir/upstream-$handler_version"
  mkdir -p "$bindir/upstream" "$bindir/upstream-$handler_version"
  say "compiling upstream's test binaries (-p $build_p)"
  (cd "$here/harness" && go test -c -p "$build_p" -o "$bindir/upstream/" $(patched_packages)) ||
    die "$kv_version: test binaries do not build"
  for pkg in $(handler_packages); do
    (cd "$handler_module" && CGO_ENABLED=1 go test -c -p "$build_p" -o "$bindir/upstream-$handler_version/$(bin_name "$pkg").test" "$pkg") ||
      die "$handler_version: test binary of $pkg does not build"
  done
  say "$kv_version: upstream unit tests of the patched packages"
  run_test_binaries "$here/harness" "$bindir/upstream" "$upstream_timeout" "vendor-patches--upstream-$kv_version-" $(patched_packages) || rc=1
  say "$handler_version: upstream unit tests of the patched packages"
  run_test_binaries "$handler_module" "$bindir/upstream-$handler_version" "$upstream_timeout" "vendor-patches--upstream-$handler_version-" $(handler_packages) || rc=1
  [ $rc = 0 ] && say "upstream tests passed" || say "UPSTREAM TESTS FAILED"
  return $rc
}

cmd_test() {
  local rc=0 bindir harness_pkgs
  cmd_upstream || rc=1
  bindir="$here/.work/testbin"
  rm -rf "$bindir/harness" && mkdir -p "$bindir/harness"
  say "compiling the harness test binaries (-p $build_p)"
  # One parallel compile+link per binary; they then run one at a time (-p 1
  # semantics): the QEMU suite and the loopback leak checks must not share the CPU.
  (cd "$here/harness" && go test -c -p "$build_p" $(tags_flag) -o "$bindir/harness/" ./...) ||
    die "harness test binaries do not build"
  harness_pkgs=$(cd "$here/harness" && go list $(tags_flag) ./...)
  say "harness tests (loopback, netns + QEMU)"
  run_test_binaries "$here/harness" "$bindir/harness" "$harness_timeout" "vendor-patches--" $harness_pkgs || rc=1
  # The code cmd/virt-handler runs to build its proxy (patch 0006) and the socket
  # list of its migration target controller (0011), in the v1.8.4 tree whose
  # virt-handler builds: compiled as virt-handler is (CGO_ENABLED=1).
  if harness_patched; then
    rm -rf "$bindir/wiring" && mkdir -p "$bindir/wiring"
    (cd "$handler_module" && CGO_ENABLED=1 go test -c -p "$build_p" $(tags_flag) -o "$bindir/wiring/" ./wiring) ||
      die "$handler_version: wiring test binary does not build"
    say "$handler_version: virt-handler's migration proxy wiring (netns)"
    run_test_binaries "$handler_module" "$bindir/wiring" "$upstream_timeout" "vendor-patches--" \
      github.com/migranet/migranet/vendor-patches/virt-handler-$handler_version/wiring || rc=1
  fi
  rebase_selftest || rc=1
  print_summary
  [ $rc = 0 ] && say "all tests passed" || say "TESTS FAILED"
  return $rc
}

# rebase_selftest: run.sh rebase-check against three trees whose answer is known:
# v1.9.0 (the series' own base: every patch OK, no CVE fix), v1.9.0 with
# testdata/simulated-cve-fix-v1.9.0.patch (the fix detected, 0011 to drop, the
# conflicting hunks named) and v1.8.4 checked with the v1.9.0 series (0003's
# SetupMetrics hunk named). Each case: exit status and lines expected.
rebase_selftest() {
  local tmp src d ran=0 passed=0 failed=0 out status name want_rc line ok
  tmp=$(mktemp -d)
  say "rebase-check self-test"
  # The simulated tree: the directories the series and the simulation touch.
  src=$(cd "$tmp" && GONOSUMDB=kubevirt.io go mod download -json kubevirt.io/kubevirt@$kv_version |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  for d in cmd/virt-handler pkg/virt-handler pkg/monitoring/metrics/virt-handler pkg/virt-launcher/virtwrap; do
    mkdir -p "$tmp/simulated/$(dirname "$d")" && cp -r "$src/$d" "$tmp/simulated/$d" || break
  done
  chmod -R u+w "$tmp/simulated" &&
    (cd "$tmp/simulated" && git apply "$here/testdata/simulated-cve-fix-v1.9.0.patch") ||
    { rm -rf "$tmp"; say "rebase-check self-test: the simulated tree cannot be made"; summary+=("rebase-check self-test: 1 ran, 0 passed, 1 failed, 0 skipped"); return 1; }
  while IFS='|' read -r name want_rc args expect; do
    ran=$((ran + 1))
    status=0
    # shellcheck disable=SC2086 # args is a word list
    out=$(bash "$here/rebase-check.sh" ${args//@TMP@/$tmp} 2>&1) || status=$?
    ok=1
    [ "$status" = "$want_rc" ] || ok=0
    while IFS= read -r line; do
      [ -z "$line" ] || grep -qF -- "$line" <<<"$out" || { ok=0; say "  $name: missing line: $line"; }
    done < <(tr ';' '\n' <<<"$expect")
    if [ $ok = 1 ]; then
      passed=$((passed + 1)); say "  ok   $name"
    else
      failed=$((failed + 1)); say "  FAIL $name (exit $status, want $want_rc); its output:"; sed 's/^/      /' <<<"$out" >&2
    fi
  done <<'CASES'
v1.9.0 onto itself|0|v1.9.0|CVE-2026-13622: not fixed in this tree;0011-virt-handler-dial-the-target-launcher-sockets-without-following-symlinks: OK;every patch applies to v1.9.0
v1.9.0 onto a simulated fix|1|v1.9.1 --tree @TMP@/simulated|CVE-2026-13622: FIXED in this tree;drop 0011 from the series;0011-virt-handler-dial-the-target-launcher-sockets-without-following-symlinks: DROP;0002-migration-proxy-close-both-legs-half-close-ordered-dials-splice: NEEDS WORK;pkg/virt-handler/migration-proxy/migration-proxy.go: @@ -439,59 +443,7 @@ func (m *migrationProxy) Stop() {
v1.9.0 series onto v1.8.4|1|v1.8.4 --series v1.9.0|0003-migration-proxy-per-migration-byte-and-throughput-metrics: NEEDS WORK;pkg/monitoring/metrics/virt-handler/metrics.go: @@ -47,7 +48,7 @@ func SetupMetrics(
CASES
  rm -rf "$tmp"
  say "rebase-check self-test: $passed passed, $failed failed"
  summary+=("rebase-check self-test: $ran ran, $passed passed, $failed failed, 0 skipped")
  [ "$failed" = 0 ]
}

# The unpatched upstream proxy, built from the pristine module (no series applied),
# run by the bench as a node process next to the patched one.
build_upstream_peer() {
  local peer="$here/.work/bin/upstreampeer"
  mkdir -p "$here/.work/bin"
  (cd "$here/upstreampeer" && go build -p "$build_p" -tags vp_unpatched -o "$peer" .) || die "upstream peer does not build"
  echo "$peer"
}

# The bench's floor: floor/splicefloor.c, the cheapest relay (blocking splice(2)
# loops, one thread per direction), built with gcc. Not part of the product.
build_floor_relay() {
  local bin="$here/.work/bin/splicefloor"
  command -v gcc >/dev/null || die "gcc not found (the bench builds its floor relay, floor/splicefloor.c)"
  mkdir -p "$here/.work/bin"
  gcc -O2 -Wall -Werror -pthread -o "$bin" "$here/floor/splicefloor.c" || die "floor relay does not build"
  echo "$bin"
}

cmd_bench() {
  [ "${MIGRANET_VP_PATCHES:-all}" = all ] || die "bench compares the full series with upstream: unset MIGRANET_VP_PATCHES"
  cmd_apply
  local peer floor
  peer=$(build_upstream_peer)
  floor=$(build_floor_relay)
  (cd "$here/harness" && go test -c -p "$build_p" -o "$here/.work/bin/migration.test" ./migration) ||
    die "bench binary does not build"
  (cd "$here/harness/migration" && MIGRANET_VP_UPSTREAM_PEER="$peer" MIGRANET_VP_FLOOR_RELAY="$floor" "$here/.work/bin/migration.test" \
    -test.run '^$' -test.bench "${MIGRANET_VP_BENCH:-.}" -test.benchtime 1x -test.timeout "$bench_timeout")
}

case "${1:-}" in
  apply) cmd_apply ;;
  virt-handler) cmd_virt_handler ;;
  upstream) rc=0; cmd_upstream || rc=$?; print_summary; exit $rc ;;
  test) cmd_test ;;
  bench) cmd_bench ;;
  lab-proxy) cmd_lab_proxy ;;
  rebase-check)
    shift
    if [ "${1:-}" = --self-test ]; then rebase_selftest; exit; fi
    exec bash "$here/rebase-check.sh" "$@" ;;
  *) echo "usage: $0 apply|virt-handler|upstream|test|bench|lab-proxy|rebase-check RELEASE [--tree DIR] [--series SERIES]" >&2; exit 2 ;;
esac
