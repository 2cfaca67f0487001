#!/usr/bin/env bash
# host-tools.sh installs, with Debian's apt, the host commands the local cluster's real node
# networks need (ip, unshare, mount, ping, nft), and for `test` also QEMU and the assembler the
# live-migration harness needs, the user-mode QEMU test/release runs the arm64 image's binary with,
# and openssl, which checks the release's signatures beside sigstore's library. It installs only what is missing, only as root on a machine with
# apt-get; elsewhere it names what is missing once and leaves the choice to the caller (make dev
# then falls back to simulated node networks and says so).
#   bash hack/host-tools.sh dev|test
set -euo pipefail
what=${1:-dev}
declare -A pkg=([ip]=iproute2 [unshare]=util-linux [mount]=mount [ping]=iputils-ping [nft]=nftables)
if [ "$what" = test ]; then
  pkg[qemu-system-x86_64]=qemu-system-x86
  pkg[as]=binutils
  pkg[qemu-aarch64-static]=qemu-user-static
  pkg[openssl]=openssl
fi
missing=()
for c in "${!pkg[@]}"; do command -v "$c" >/dev/null || missing+=("${pkg[$c]}"); done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "host-tools: missing ${missing[*]}: install them (as root: apt-get install ${missing[*]}) for real node networks" >&2
  exit 0
fi
echo "host-tools: installing ${missing[*]} (apt-get, once)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
