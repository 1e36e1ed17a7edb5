#!/usr/bin/env bash
# tools/setup.sh: install every Debian 12 package kepler-c needs to build, test
# and run. Idempotent: prints nothing and touches nothing when all is present;
# runs `apt-get update` only when a package is missing and the package lists
# cannot provide it. Must run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
	# build
	build-essential cmake pkg-config
	# BPF: clang compiles the programs, bpftool generates the skeletons
	clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev
	# libraries
	liblmdb-dev libmicrohttpd-dev libncurses-dev libyaml-dev libcap-dev libxxhash-dev
	libcrypt-dev
	# tests: cmocka, libFuzzer runtime, LMDB tools, terminal and Prometheus
	libcmocka-dev libclang-rt-14-dev lmdb-utils tmux prometheus jq curl
	openssl apache2-utils stress-ng wrk prometheus-process-exporter python3-jsonschema
)

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "setup.sh: need root to install: ${missing[*]}" >&2; exit 1; }
	SUDO=sudo
fi

export DEBIAN_FRONTEND=noninteractive
echo "setup.sh: installing ${missing[*]}" >&2

# Update the package lists only if one of the missing packages has no
# installation candidate (fresh machine, or lists too old to know it).
need_update=0
for p in "${missing[@]}"; do
	cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
	if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then need_update=1; break; fi
done
[ $need_update -eq 1 ] && $SUDO apt-get update -qq >&2

if ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
	# Stale lists give 404s on download: refresh once and retry.
	$SUDO apt-get update -qq >&2
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup.sh: done" >&2
