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
# MIGRANET_VP_PATCHES selects the series: "all" (default), "none", or a comma list of
# patch numbers ("1,2"). Anything but "all" is for showing that the harness fails
# without the patches; the harness then builds with -tags vp_unpatched where the
# patched API is missing.
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

selected_patches() { # VERSION
  local sel="${MIGRANET_VP_PATCHES:-all}" p n
  for p in "$here/kubevirt-$1"/[0-9][0-9][0-9][0-9]-*.patch; do
    [ -e "$p" ] || continue
    n=$((10#$(basename "$p" | cut -c1-4)))
    case "$sel" in
      all) echo "$p" ;;
      none) ;;
      *) [[ ",$sel," == *",$n,"* ]] && echo "$p" ;;
    esac
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

tags_flag() {
  [ "${MIGRANET_VP_PATCHES:-all}" = all ] || echo "-tags=vp_unpatched"
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
    bin="$bindir/$(basename "$pkg").test"
    [ -x "$bin" ] || continue
    raw="$bindir/$(basename "$pkg").test2json"
    json="$outdir/$prefix$(basename "$pkg").json"
    start=$(date +%s)
    status=0
    (cd "$dir" && "$bin" -test.v=test2json -test.timeout "$timeout" -test.count 1 2>&1 | tee "$raw" |
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
  local rc=0 bindir="$here/.work/testbin"
  rm -rf "$bindir/upstream" "$bindir/upstream-$handler_version"
  mkdir -p "$bindir/upstream" "$bindir/upstream-$handler_version"
  say "compiling upstream's test binaries (-p $build_p)"
  (cd "$here/harness" && go test -c -p "$build_p" -o "$bindir/upstream/" $(patched_packages)) ||
    die "$kv_version: test binaries do not build"
  (cd "$handler_module" && CGO_ENABLED=1 go test -c -p "$build_p" -o "$bindir/upstream-$handler_version/" $(handler_packages)) ||
    die "$handler_version: test binaries do not build"
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
  # The code cmd/virt-handler runs to build its proxy (patch 0006), in the v1.8.4
  # tree whose virt-handler builds: compiled as virt-handler is (CGO_ENABLED=1).
  if [ "${MIGRANET_VP_PATCHES:-all}" = all ]; then
    rm -rf "$bindir/wiring" && mkdir -p "$bindir/wiring"
    (cd "$handler_module" && CGO_ENABLED=1 go test -c -p "$build_p" -o "$bindir/wiring/" ./wiring) ||
      die "$handler_version: wiring test binary does not build"
    say "$handler_version: virt-handler's migration proxy wiring (netns)"
    run_test_binaries "$handler_module" "$bindir/wiring" "$upstream_timeout" "vendor-patches--" \
      github.com/migranet/migranet/vendor-patches/virt-handler-$handler_version/wiring || rc=1
  fi
  print_summary
  [ $rc = 0 ] && say "all tests passed" || say "TESTS FAILED"
  return $rc
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
  *) echo "usage: $0 apply|virt-handler|upstream|test|bench" >&2; exit 2 ;;
esac
