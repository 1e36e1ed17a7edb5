#!/usr/bin/env bash
# tools/setup.sh: install every Debian 12 package kepler-c needs to build, test
# and run. Idempotent: prints nothing and touches nothing when all is present;
# runs `apt-get update` only when a package is missing and the package lists
# cannot provide it. Must run as root (or with sudo available). As root it
# also makes the user and group kepler, as the package does.
#
# The tests run Prometheus and process-exporter themselves, on their own
# ports. Debian's packages would enable and start them as system services:
# while this script installs them, a policy-rc.d forbids starting services,
# and the ones it installed (never ones that were already there) are then
# disabled, so the test command starts nothing system-wide.
set -euo pipefail

PACKAGES=(
	# build
	build-essential cmake pkg-config
	# BPF: clang compiles the programs, bpftool generates the skeletons
	clang llvm bpftool libbpf-dev libelf-dev zlib1g-dev
	# libraries
	liblmdb-dev libmicrohttpd-dev libgnutls28-dev libncurses-dev libyaml-dev libcap-dev libxxhash-dev libzstd-dev libseccomp-dev
	libcrypt-dev libcurl4-gnutls-dev libjson-c-dev libfreeipmi-dev libprotobuf-c-dev protobuf-c-compiler libsnappy-dev libdeflate-dev
	# tests: cmocka, libFuzzer runtime, LMDB tools, terminal and Prometheus
	libcmocka-dev libclang-rt-14-dev clang-format-14 lmdb-utils tmux prometheus jq curl
	openssl apache2-utils stress-ng wrk prometheus-process-exporter python3-jsonschema strace
	# an OTLP receiver decoding with OpenTelemetry's own definitions (npm: @opentelemetry/otlp-transformer);
	# npm itself is not asked for: this machine's nodejs (NodeSource's) carries it, and Debian's npm
	# package conflicts with that (test_push_otlp.sh says so and skips where npm is missing)
	nodejs
	# packaging: man pages rendered, units verified, the package's dependencies computed
	man-db systemd dpkg-dev
	# VM passthrough: real qemu processes, and another RAPL reader of the trees
	qemu-system-x86 prometheus-node-exporter
	# IPMI: OpenIPMI's BMC simulator, its headers for the test's DCMI module, FreeIPMI's tools beside
	openipmi libopenipmi-dev freeipmi-tools
)

missing=()
for p in "${PACKAGES[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done
# The collector's user and the store's group, made as the package makes them
# (deploy/debian/postinst), so that tools/run.sh runs as deployed: the
# collector becomes kepler, the store is kepler:kepler, the exporter keeps
# group kepler (docs/security.md). Only as root; said once.
make_user() {
	[ "$(id -u)" -eq 0 ] || return 0
	getent passwd kepler >/dev/null && return 0
	getent group kepler >/dev/null || groupadd --system kepler
	useradd --system --gid kepler --no-create-home --home-dir /var/lib/kepler --shell /usr/sbin/nologin \
		--comment "kepler-c collector" kepler &&
		echo "setup.sh: made the user kepler in group kepler (the collector's, as the package makes them)" >&2
}
if [ ${#missing[@]} -eq 0 ]; then
	make_user
	exit 0
fi

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

# No service starts while we install (invoke-rc.d asks policy-rc.d; 101 =
# action forbidden). An operator's own policy-rc.d is left alone.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e $policy ]; then
	printf '#!/bin/sh\n# tools/setup.sh: no service starts while test packages install\nexit 101\n' |
		$SUDO tee $policy >/dev/null
	$SUDO chmod 0755 $policy
	own_policy=1
fi
drop_policy() { [ $own_policy -eq 0 ] || $SUDO rm -f $policy; }
trap drop_policy EXIT

if ! $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
	# Stale lists give 404s on download: refresh once and retry.
	$SUDO apt-get update -qq >&2
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The services of packages installed just now: disabled (and stopped where
# systemd runs), so that they do not start at the next boot either.
services=()
for p in "${missing[@]}"; do
	case $p in prometheus | prometheus-process-exporter) services+=("$p.service") ;; esac
done
if [ ${#services[@]} -gt 0 ] && command -v systemctl >/dev/null; then
	if [ -d /run/systemd/system ]; then
		$SUDO systemctl disable --now "${services[@]}" >/dev/null 2>&1 || true
	else
		$SUDO systemctl disable "${services[@]}" >/dev/null 2>&1 || true
	fi
	echo "setup.sh: ${services[*]} installed for the tests, not enabled or started" >&2
fi
make_user
echo "setup.sh: done" >&2
