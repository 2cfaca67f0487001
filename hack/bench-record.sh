#!/usr/bin/env bash
# bench-record.sh is `make bench-record`: it runs the Go benchmarks (`go run ./test/bench`), shows
# their output as it comes, and writes their summary lines, with the date (UTC), the commit and the
# machine they ran on, to docs/benchmarks-latest.md. That file is only ever written by this script.
#
# `go run ./test/bench` prints its summary lines (`bench <measure>: ...`) and nothing else on
# stdout; progress and build output go to stderr. So stdout is recorded as is and stderr is only
# shown. The file is replaced only when the command succeeds: a failed or interrupted run leaves
# the last complete record in place and its output in a temporary file, whose path is printed.
#
# Environment:
#   BENCH_CMD         the command to run, through bash -c (default: "$GO run ./test/bench");
#                     e.g. BENCH_CMD='printf "bench x: 1\n"' to try the script without benchmarks
#   BENCH_RECORD_OUT  the file to write (default: docs/benchmarks-latest.md)
#   BENCH_RECORD_BY   the make target the file names as its writer (default: bench-record;
#                     make scale-record: scale-record)
#   GO                the go command (default: go)
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
cmd=${BENCH_CMD:-"$GO run ./test/bench"}
out=${BENCH_RECORD_OUT:-docs/benchmarks-latest.md}
by=${BENCH_RECORD_BY:-bench-record}

raw=$(mktemp "${TMPDIR:-/tmp}/migranet-bench-record.XXXXXX")
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "bench-record: running: $cmd (stdout kept in $raw)" >&2

set +e
bash -c "$cmd" | tee "$raw"
rc=${PIPESTATUS[0]}
set -e
if [[ $rc -ne 0 ]]; then
  echo "bench-record: '$cmd' exited with status $rc; $out left as it was; its output: $raw" >&2
  exit "$rc"
fi
if [[ ! -s $raw ]]; then
  echo "bench-record: '$cmd' printed no summary line; $out left as it was" >&2
  exit 1
fi
finished=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# The machine, as far as this host tells. Missing facts read "unknown", never a guess.
cpus=$(nproc 2>/dev/null || echo unknown)
model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)
memory=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null)
kernel=$(uname -srm 2>/dev/null || true)
goversion=$($GO version 2>/dev/null || true)
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || true)
if [[ -n $commit && -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]]; then
  commit="$commit (with uncommitted changes)"
fi

cell() { local v=${1:-unknown}; printf '%s' "${v//|/\\|}"; } # a table cell: | escaped

tmp=$(mktemp "$out.XXXXXX")
{
  echo "# Latest benchmark figures"
  echo
  echo "<!-- Written by \`make $by\` (hack/bench-record.sh). Never edit by hand: run it again. -->"
  echo
  echo "The summary lines of the last complete \`make $by\` run. What each measure is and how"
  echo "to read it: [benchmarks.md](benchmarks.md)."
  echo
  echo "| | |"
  echo "|---|---|"
  echo "| started (UTC) | $started |"
  echo "| finished (UTC) | $finished |"
  echo "| command | \`$(cell "$cmd")\` |"
  echo "| commit | $(cell "$commit") |"
  echo "| CPUs (\`nproc\`) | $(cell "$cpus") |"
  echo "| CPU model | $(cell "$model") |"
  echo "| memory | $(cell "$memory") |"
  echo "| kernel | $(cell "$kernel") |"
  echo "| Go | $(cell "$goversion") |"
  echo
  echo '```'
  cat "$raw"
  echo '```'
} >"$tmp"
mv "$tmp" "$out"
rm -f "$raw"
echo "bench-record: wrote $out" >&2
