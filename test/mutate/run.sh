#!/usr/bin/env bash
# make mutate: does the unit-test suite notice wrong code? Two checks, neither part of make test.
#   bugs      each patch in test/mutate/bugs/ is a bug some suite once let through; applied alone
#             to a copy of the tree it must make the test its header names fail.
#   gremlins  mutation testing of settings/ (and its controller/), netcontroller/ and webhook/ (and its migrationcheck/) with their unit tests
#             (gremlins at GREMLINS_VERSION, pinned in the Makefile, run from the Go module proxy): score per package, and every
#             surviving mutant not explained in test/mutate/equivalent.txt.
# Usage: bash test/mutate/run.sh [bugs|gremlins|all]   (MUTATE_PKGS="settings" to narrow)
set -euo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
GREMLINS_VERSION=${GREMLINS_VERSION:-$(sed -n 's/^GREMLINS_VERSION ?= //p' Makefile)}
PKGS=${MUTATE_PKGS:-netcontroller webhook webhook/migrationcheck settings settings/controller}
OUT=${MUTATE_OUT:-.mutate}
# A mutant's run compiles and links the package's test binary; the timeout is the coverage run's
# duration times this, generous because the machine is shared (a timed-out mutant is not scored).
TIMEOUT_COEFFICIENT=${MUTATE_TIMEOUT_COEFFICIENT:-20}
mode=${1:-all}
mkdir -p "$OUT"
status=0

# copy_tree DIR: the work tree as it is (tracked and untracked files, not ignored ones) into DIR.
copy_tree() { git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - 2>/dev/null | tar -xf - -C "$1"; }

bugs() {
	local tmp caught=0 missed=0
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	for patch in test/mutate/bugs/*.patch; do
		local what pkg test
		what=$(sed -n 1p "$patch")
		read -r _ pkg test _ < <(sed -n 2p "$patch")
		rm -rf "$tmp/tree" && mkdir "$tmp/tree" && copy_tree "$tmp/tree"
		(cd "$tmp/tree" && git apply "$OLDPWD/$patch")
		if (cd "$tmp/tree" && $GO vet "$pkg" >/dev/null 2>&1) &&
			! (cd "$tmp/tree" && $GO test -count=1 -run "^${test}\$" "$pkg" >"$tmp/out" 2>&1) &&
			grep -q -- "--- FAIL: ${test}" "$tmp/out"; then
			echo "caught  $(basename "$patch"): $test"
			caught=$((caught + 1))
		else
			echo "MISSED  $(basename "$patch"): $what — $test did not fail (or the patch does not build)"
			missed=$((missed + 1))
		fi
	done
	echo "bugs: $caught caught, $missed missed"
	[ "$missed" -eq 0 ] || status=1
}

gremlins() {
	local started pkg log
	: >"$OUT/survivors.txt"
	for pkg in $PKGS; do
		log="$OUT/${pkg//\//-}.log"
		started=$(date +%s)
		# -vet=off: a mutant must be killed by a test, not by go vet; -ldflags=-w: no DWARF, a
		# quicker link of each mutant's test binary; -count=1: the coverage run that sets the timeout
		# is never a cached result.
		GOFLAGS="${GOFLAGS:-} -vet=off -ldflags=-w -count=1" $GO run "github.com/go-gremlins/gremlins/cmd/gremlins@$GREMLINS_VERSION" unleash \
			--timeout-coefficient "$TIMEOUT_COEFFICIENT" --exclude-files 'zz_generated' --exclude-files '(^|/)certs/' \
			--workers "${MUTATE_WORKERS:-0}" \
			--output "$OUT/${pkg//\//-}.json" "./$pkg" >"$log" 2>&1 || true
		local killed lived timedout notcov
		killed=$(grep -c '^ *KILLED ' "$log" || true)
		lived=$(grep -c '^ *LIVED ' "$log" || true)
		timedout=$(grep -c '^ *TIMED OUT ' "$log" || true)
		notcov=$(grep -c '^ *NOT COVERED ' "$log" || true)
		local score="n/a"
		[ $((killed + lived)) -eq 0 ] || score=$(awk -v k="$killed" -v l="$lived" 'BEGIN{printf "%.1f%%", 100*k/(k+l)}')
		echo "gremlins $pkg: score $score (killed $killed, lived $lived, timed out $timedout, not covered $notcov) in $(($(date +%s) - started))s"
		grep '^ *LIVED ' "$log" | sed -E "s|^ *LIVED ([A-Z_]+) at (.*)$|$pkg/\2 \1|" >>"$OUT/survivors.txt" || true
	done
	local unexplained=0 key
	while read -r key; do
		if ! grep -q "^${key}\b" test/mutate/equivalent.txt; then
			echo "survivor, not explained in test/mutate/equivalent.txt: $key"
			unexplained=$((unexplained + 1))
		fi
	done <"$OUT/survivors.txt"
	echo "gremlins: $(wc -l <"$OUT/survivors.txt") survivors, $unexplained not explained (logs in $OUT/)"
	[ "$unexplained" -eq 0 ] || status=1
}

case "$mode" in
bugs) bugs ;;
gremlins) gremlins ;;
all) bugs && gremlins ;;
*) echo "usage: $0 [bugs|gremlins|all]" >&2 && exit 2 ;;
esac
exit "$status"
