#!/usr/bin/env bash
# rebase-check.sh (run.sh rebase-check): does a patch series apply to another
# KubeVirt release? Applies each patch of the series in order to the files it
# touches in that release and prints, per patch, OK, OK (3-way) or NEEDS WORK
# with every hunk that does not apply (file and hunk header); says whether the
# release already carries upstream's fix of CVE-2026-13622 (then patch 0011 is
# to be dropped). Nothing is built; the repository is not changed.
#
#   run.sh rebase-check RELEASE                 RELEASE from the Go module proxy
#   run.sh rebase-check RELEASE --tree DIR      RELEASE as the kubevirt tree DIR
#                                               (a git checkout or an unpacked module)
#   run.sh rebase-check --tree DIR              (the tree's release unnamed)
#   ... --series SERIES                         the series to check: v1.9.0 or
#                                               v1.8.4 (default: the series of
#                                               RELEASE's minor, else the newest)
#
# How: a scratch git repository holds the series' own base release (from the
# module cache) with each patch applied in turn, so every blob a patch names in
# its "index" line is there; the touched files of the target tree are then
# committed on top and each patch is tried with git apply --check, then
# git apply --3way, and, when that leaves conflicts, git apply --reject, whose
# rejected hunks are listed; the partial result is kept so later patches are
# checked too (their results may follow from an earlier patch's rejects).
#
# Exit status: 0 when every patch applies (cleanly or by a 3-way merge, 0011
# not counted where upstream's fix is in), 1 when some patch needs work, 2 on
# a usage or resolution error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' >&2
  exit 2
}
say() { echo "rebase-check: $*"; }
fail() { echo "rebase-check: $*" >&2; exit 2; }

release="" tree="" series=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tree) [ $# -ge 2 ] || usage; tree=$2; shift 2 ;;
    --series) [ $# -ge 2 ] || usage; series=$2; shift 2 ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) [ -z "$release" ] || usage; release=$1; shift ;;
  esac
done
[ -n "$release" ] || [ -n "$tree" ] || usage

# The series: named, or the one of the release's minor, or the newest.
if [ -z "$series" ]; then
  minor=$(echo "$release" | sed -n 's/^\(v[0-9]*\.[0-9]*\)\..*/\1/p')
  for d in "$here"/kubevirt-v*/; do
    d=$(basename "$d")
    if [ -n "$minor" ] && [[ "$d" == "kubevirt-$minor."* ]]; then series=${d#kubevirt-}; fi
  done
  if [ -z "$series" ]; then
    series=$(cd "$here" && ls -d kubevirt-v*/ | sed 's#^kubevirt-##; s#/$##' | sort -V | tail -1)
  fi
fi
series_dir="$here/kubevirt-$series"
[ -d "$series_dir" ] || fail "no series $series (vendor-patches/kubevirt-$series)"
patches=("$series_dir"/[0-9][0-9][0-9][0-9]-*.patch)

# module_dir VERSION: kubevirt.io/kubevirt@VERSION from the module cache, fetched
# through the module proxy if needed (outside any module: nothing is recorded).
module_dir() {
  local out dir
  out=$(cd "$scratch" && GOFLAGS= GO111MODULE=on go mod download -json "kubevirt.io/kubevirt@$1" 2>&1) || true
  dir=$(echo "$out" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    # The error names the proxy's address; its last words say why.
    echo "rebase-check: kubevirt.io/kubevirt@$1 is not served by the Go module proxy ($(echo "$out" |
      sed -n 's/.*server response: \([^"]*\).*/\1/p' | tail -1));" \
      "check out that release and pass --tree DIR" >&2
    return 1
  fi
  echo "$dir"
}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

base_version=$series
base=$(module_dir "$base_version") || exit 2
if [ -n "$tree" ]; then
  [ -d "$tree/pkg/virt-handler" ] || fail "$tree does not look like a kubevirt tree (no pkg/virt-handler)"
  target=$(cd "$tree" && pwd)
  what="${release:-the tree} ($target)"
else
  target=$(module_dir "$release") || exit 2
  what="$release (module proxy)"
fi

# Every file the series touches.
mapfile -t files < <(sed -n 's#^--- a/##p; s#^+++ b/##p' "${patches[@]}" | sort -u)

repo="$scratch/repo"
git init -q "$repo"
g() { git -C "$repo" -c user.name=rebase-check -c user.email=rebase-check@invalid "$@"; }

copy_touched() { # FROM: the touched files FROM has, into the scratch work tree
  local f
  for f in "${files[@]}"; do
    if [ -f "$1/$f" ]; then
      mkdir -p "$repo/$(dirname "$f")"
      cp "$1/$f" "$repo/$f"
      chmod u+w "$repo/$f"
    fi
  done
}

# The series on its own base: every blob a patch's index line names.
copy_touched "$base"
g add -A
g commit -qm "$base_version" --allow-empty
for p in "${patches[@]}"; do
  if ! g apply --index "$p" 2>"$scratch/err"; then
    cat "$scratch/err" >&2
    fail "$(basename "$p") does not apply to its own base $base_version: the series is broken"
  fi
  g commit -qm "$(basename "$p")"
done

# The target's touched files on top.
g rm -rq --cached . >/dev/null
find "$repo" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
copy_touched "$target"
g add -A
g commit -qm "target" --allow-empty

say "series kubevirt-$series (${#patches[@]} patches) onto $what"

# CVE-2026-13622: does the target's target proxy already reach the launcher's
# sockets through pkg/safepath (upstream #18966 / #19150)?
cve_fixed=0
cve_evidence=$(cd "$target" && grep -n -E 'safepath\.|pkg/safepath"' \
  pkg/virt-handler/migration-target.go pkg/virt-handler/migration-proxy/*.go 2>/dev/null |
  grep -v '_test.go:' | head -3 || true)
if [ -n "$cve_evidence" ]; then
  if grep -q 'type LauncherSocket struct' "$target"/pkg/virt-handler/migration-proxy/*.go 2>/dev/null; then
    say "CVE-2026-13622: the tree already carries migranet's 0011 (LauncherSocket): it is a patched tree, not a release"
  else
    cve_fixed=1
    say "CVE-2026-13622: FIXED in this tree: its target proxy reaches the launcher's sockets through pkg/safepath (upstream #18966 / #19150):"
    echo "$cve_evidence" | sed 's/^/    /'
    say "  -> drop 0011 from the series (and port harness/kvproxy and wiring's StartTarget adapters to upstream's socket type)"
  fi
else
  say "CVE-2026-13622: not fixed in this tree (no pkg/safepath in its target proxy): keep 0011"
fi

rc=0
partial=""
for p in "${patches[@]}"; do
  name=$(basename "$p" .patch)
  n=${name%%-*}
  drop=0
  if [ "$cve_fixed" = 1 ] && [ "$n" = 0011 ]; then drop=1; fi
  note=""
  [ -n "$partial" ] && note=" (after the rejects of $partial)"
  if g apply --check "$p" 2>/dev/null; then
    g apply --index "$p"
    g commit -qm "$name"
    if [ $drop = 1 ]; then
      say "$name: applies, but the tree has upstream's fix: DROP it$note"
    else
      say "$name: OK$note"
    fi
    continue
  fi
  if g apply --3way "$p" >"$scratch/3way" 2>&1 && ! g diff --name-only --diff-filter=U | grep -q .; then
    g commit -qm "$name (3-way)"
    say "$name: OK (3-way merge: the context moved)$note"
    continue
  fi
  g reset -q --hard
  # The hunks that do not apply, from git apply --reject's .rej files.
  g apply --reject --index "$p" >"$scratch/reject" 2>&1 || true
  if [ $drop = 1 ]; then
    say "$name: DROP (the tree has upstream's fix; it does not apply either)$note"
  else
    say "$name: NEEDS WORK$note"
    rc=1
  fi
  sed -n 's/^error: \(.*: does not exist in index\)$/    \1/p; s/^error: \(.*: already exists in index\)$/    \1/p' "$scratch/reject"
  while IFS= read -r rej; do
    f=${rej#"$repo/"}
    f=${f%.rej}
    grep '^@@ ' "$rej" | sed "s#^#    $f: #"
  done < <(find "$repo" -name '*.rej' -not -path '*/.git/*' | sort)
  find "$repo" -name '*.rej' -not -path '*/.git/*' -delete
  g add -A
  g commit -qm "$name (partial)" --allow-empty
  [ $drop = 1 ] || partial="${partial:+$partial, }$n"
done
if [ $rc = 0 ]; then
  say "every patch applies${release:+ to $release}"
else
  say "some patches need work: redo the hunks listed above by hand"
fi
exit $rc
