#!/usr/bin/env bash
# vendor-patches entry point: apply the migranet patch series to KubeVirt v1.9.0
# (taken from the Go module cache), build the patched packages, run their tests,
# run the benchmarks.
#
#   run.sh apply   resolve kubevirt.io/kubevirt v1.9.0, apply the series into a work
#                  dir outside the tree, build the patched packages
#   run.sh test    apply if needed, then upstream's unit tests of the patched packages
#                  and the harness tests (loopback + netns/QEMU suite)
#   run.sh bench   print "bench proxy: ..." lines (patched vs direct vs upstream)
#
# MIGRANET_VP_PATCHES selects the series: "all" (default), "none", or a comma list of
# patch numbers ("1,2"). Anything but "all" is for showing that the harness fails
# without the patches; the harness then builds with -tags vp_unpatched where the
# patched API is missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kv_version=v1.9.0
series_dir="$here/kubevirt-$kv_version"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/migranet/vendor-patches"
# Compiles run with -p build_p (2 cores in CI); test binaries then run one at a
# time (-p 1): the QEMU suite and the loopback leak checks must not share the CPU.
build_p="${MIGRANET_VP_BUILD_P:-2}"
# Every go test carries a -timeout: a stuck test panics with all goroutine stacks
# instead of hanging CI.
upstream_timeout="${MIGRANET_VP_UPSTREAM_TIMEOUT:-5m}"
harness_timeout="${MIGRANET_VP_HARNESS_TIMEOUT:-8m}"
bench_timeout="${MIGRANET_VP_BENCH_TIMEOUT:-8m}"

die() { echo "vendor-patches: $*" >&2; exit 1; }
say() { echo "vendor-patches: $*" >&2; }

selected_patches() {
  local sel="${MIGRANET_VP_PATCHES:-all}" p n
  for p in "$series_dir"/[0-9][0-9][0-9][0-9]-*.patch; do
    [ -e "$p" ] || continue
    n=$((10#$(basename "$p" | cut -c1-4)))
    case "$sel" in
      all) echo "$p" ;;
      none) ;;
      *) [[ ",$sel," == *",$n,"* ]] && echo "$p" ;;
    esac
  done
}

series_hash() {
  { echo "$kv_version"; selected_patches | while read -r p; do basename "$p"; cat "$p"; done; } |
    sha256sum | cut -c1-12
}

# apply: pristine module -> writable copy -> git apply --check -> git apply -> build.
cmd_apply() {
  command -v go >/dev/null || die "go not found"
  command -v git >/dev/null || die "git not found (git apply is used for the series)"
  local hash wd src tmp p
  hash=$(series_hash)
  wd="$cache_root/kubevirt-$kv_version-$hash"
  if [ ! -f "$wd/.migranet-applied" ]; then
    src=$(cd "$here/harness" && GOFLAGS=-mod=mod go mod download -json "kubevirt.io/kubevirt@$kv_version" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -n "$src" ] && [ -d "$src" ] || die "kubevirt.io/kubevirt@$kv_version not resolved through the module proxy"
    mkdir -p "$cache_root"
    tmp=$(mktemp -d "$cache_root/.tmp-XXXXXX")
    cp -r "$src/." "$tmp/"
    chmod -R u+w "$tmp"
    while read -r p; do
      [ -n "$p" ] || continue
      # git apply never fuzzes: any context mismatch is a reject.
      (cd "$tmp" && git apply --check --verbose "$p" >/dev/null 2>"$tmp/.apply.err") ||
        { cat "$tmp/.apply.err" >&2; rm -rf "$tmp"; die "patch does not apply cleanly: $(basename "$p")"; }
      (cd "$tmp" && git apply --whitespace=nowarn "$p") || { rm -rf "$tmp"; die "apply failed: $(basename "$p")"; }
      say "applied $(basename "$p")"
    done < <(selected_patches)
    rm -f "$tmp/.apply.err"
    selected_patches | xargs -r -n1 basename > "$tmp/.migranet-applied"
    rm -rf "$wd"
    mv "$tmp" "$wd"
  fi
  mkdir -p "$here/.work"
  ln -sfn "$wd" "$here/.work/kubevirt"
  say "kubevirt $kv_version work dir: $wd ($(wc -l < "$wd/.migranet-applied") patches)"
  (cd "$here/harness" && go build -p "$build_p" $(tags_flag) $(patched_packages) ./...)
  say "patched packages build"
}

tags_flag() {
  [ "${MIGRANET_VP_PATCHES:-all}" = all ] || echo "-tags=vp_unpatched"
}

# The upstream packages the series touches and that build without libvirt headers.
patched_packages() {
  echo kubevirt.io/kubevirt/pkg/virt-handler/migration-proxy
  echo kubevirt.io/kubevirt/pkg/virt-launcher/virtwrap/api
}

# run_test_binaries DIR TIMEOUT PKG...: runs each package's compiled test binary
# from DIR in the package's directory (tests read testdata relative to it), one
# at a time, with TIMEOUT. Packages without tests have no binary and are skipped.
run_test_binaries() {
  local bindir="$1" timeout="$2" rc=0 pkg dir bin start
  shift 2
  for pkg in "$@"; do
    dir=$(cd "$here/harness" && go list $(tags_flag) -f '{{.Dir}}' "$pkg")
    bin="$bindir/$(basename "$pkg").test"
    [ -x "$bin" ] || continue
    start=$(date +%s)
    if (cd "$dir" && "$bin" -test.timeout "$timeout" -test.count 1 2>&1 | sed 's/^/    /'; exit "${PIPESTATUS[0]}"); then
      echo "ok   $pkg $(( $(date +%s) - start ))s"
    else
      echo "FAIL $pkg $(( $(date +%s) - start ))s"
      rc=1
    fi
  done
  return $rc
}

cmd_test() {
  cmd_apply
  local rc=0 bindir harness_pkgs
  bindir="$here/.work/testbin"
  rm -rf "$bindir" && mkdir -p "$bindir/upstream" "$bindir/harness"
  say "compiling the test binaries (-p $build_p)"
  # One parallel compile+link per binary; they then run one at a time (-p 1
  # semantics): the QEMU suite and the loopback leak checks must not share the CPU.
  (cd "$here/harness" && go test -c -p "$build_p" -o "$bindir/upstream/" $(patched_packages) &&
    go test -c -p "$build_p" $(tags_flag) -o "$bindir/harness/" ./...) || die "test binaries do not build"
  harness_pkgs=$(cd "$here/harness" && go list $(tags_flag) ./...)
  say "upstream unit tests of the patched packages"
  run_test_binaries "$bindir/upstream" "$upstream_timeout" $(patched_packages) || rc=1
  say "harness tests (loopback, netns + QEMU)"
  run_test_binaries "$bindir/harness" "$harness_timeout" $harness_pkgs || rc=1
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

cmd_bench() {
  [ "${MIGRANET_VP_PATCHES:-all}" = all ] || die "bench compares the full series with upstream: unset MIGRANET_VP_PATCHES"
  cmd_apply
  local peer
  peer=$(build_upstream_peer)
  (cd "$here/harness" && go test -c -p "$build_p" -o "$here/.work/bin/migration.test" ./migration) ||
    die "bench binary does not build"
  (cd "$here/harness/migration" && MIGRANET_VP_UPSTREAM_PEER="$peer" "$here/.work/bin/migration.test" \
    -test.run '^$' -test.bench . -test.benchtime 1x -test.timeout "$bench_timeout")
}

case "${1:-}" in
  apply) cmd_apply ;;
  test) cmd_test ;;
  bench) cmd_bench ;;
  *) echo "usage: $0 apply|test|bench" >&2; exit 2 ;;
esac
