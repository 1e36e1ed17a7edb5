#!/usr/bin/env bash
# Build a fake sysfs tree that mirrors the real powercap (RAPL) and hwmon
# layout, for tests and demos on machines without meters:
#
#   tools/fake-sysfs.sh DIR [--sockets N] [--dram] [--psys] [--core] [--mmio]
#                           [--hwmon] [--no-rapl] [--perf-power]
#
# --perf-power adds perf's RAPL PMU (bus/event_source/devices/power: type,
# cpumask with one CPU per socket, events/energy-* with .scale and .unit for
# the domains asked for) and each CPU's topology/physical_package_id.
# then run `kepler-collectd --host.sysfs DIR`. As on a real machine, the
# zones live under devices/ and class/powercap/ and class/hwmon/ hold
# symlinks to them. Counters start at fixed values; tests write new values
# into energy_uj (or power1_average) to make them advance.
set -euo pipefail

usage() {
	sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}

dir= sockets=1 dram=0 psys=0 core=0 mmio=0 hwmon=0 rapl=1 perf=0
while [ $# -gt 0 ]; do
	case "$1" in
	--sockets) sockets="${2:?--sockets needs a number}"; shift ;;
	--dram) dram=1 ;;
	--psys) psys=1 ;;
	--core) core=1 ;;
	--mmio) mmio=1 ;;
	--hwmon) hwmon=1 ;;
	--no-rapl) rapl=0 ;;
	--perf-power) perf=1 ;;
	-h|--help) usage 0 ;;
	-*) echo "fake-sysfs.sh: unknown option $1" >&2; usage ;;
	*) [ -z "$dir" ] || usage; dir="$1" ;;
	esac
	shift
done
[ -n "$dir" ] || usage
case "$sockets" in [1-8]) ;; *) echo "fake-sysfs.sh: --sockets must be 1..8" >&2; exit 2 ;; esac

# Figures of a real Xeon: package range 262143328850 uJ, sub-zones 65532610987 uJ.
PKG_MAX=262143328850
SUB_MAX=65532610987

# zone DIR NAME ENERGY MAX
zone() {
	mkdir -p "$1"
	printf '%s\n' "$2" >"$1/name"
	printf '%s\n' "$3" >"$1/energy_uj"
	printf '%s\n' "$4" >"$1/max_energy_range_uj"
	printf '1\n' >"$1/enabled"
	printf 'long_term\n' >"$1/constraint_0_name"
	printf '125000000\n' >"$1/constraint_0_power_limit_uw"
}

# link CLASSDIR TARGET: class/<x>/<name> -> ../../devices/... (relative, as sysfs does)
link() {
	mkdir -p "$dir/class/$1"
	ln -sfn "../../${2#"$dir"/}" "$dir/class/$1/$(basename "$2")"
}

mkdir -p "$dir"
if [ "$rapl" = 1 ]; then
	base="$dir/devices/virtual/powercap/intel-rapl"
	mkdir -p "$base"
	link powercap "$base"
	for ((s = 0; s < sockets; s++)); do
		z="$base/intel-rapl:$s"
		zone "$z" "package-$s" $((240422366267 - s * 1000000000)) $PKG_MAX
		link powercap "$z"
		sub=0
		if [ "$core" = 1 ]; then
			zone "$z/intel-rapl:$s:$sub" core $((40000000000 + s)) $SUB_MAX
			link powercap "$z/intel-rapl:$s:$sub"; sub=$((sub + 1))
		fi
		if [ "$dram" = 1 ]; then
			zone "$z/intel-rapl:$s:$sub" dram $((20000000000 + s)) $SUB_MAX
			link powercap "$z/intel-rapl:$s:$sub"; sub=$((sub + 1))
		fi
	done
	if [ "$psys" = 1 ]; then
		zone "$base/intel-rapl:$sockets" psys 100000000000 $PKG_MAX
		link powercap "$base/intel-rapl:$sockets"
	fi
	if [ "$mmio" = 1 ]; then
		# the same package-0 counter, also reachable through MMIO
		m="$dir/devices/virtual/powercap/intel-rapl-mmio"
		mkdir -p "$m"
		link powercap "$m"
		zone "$m/intel-rapl-mmio:0" package-0 240422366267 $PKG_MAX
		link powercap "$m/intel-rapl-mmio:0"
	fi
fi
if [ "$hwmon" = 1 ]; then
	# ACPI power meter (acpi_power_meter driver) and a chip that is not one
	h="$dir/devices/LNXSYSTM:00/LNXSYBUS:00/ACPI000D:00/hwmon/hwmon1"
	mkdir -p "$h"
	printf 'power_meter\n' >"$h/name"
	printf '250000000\n' >"$h/power1_average"
	printf '1000\n' >"$h/power1_average_interval"
	printf '0\n' >"$h/power1_is_battery"
	link hwmon "$h"
	t="$dir/devices/platform/coretemp.0/hwmon/hwmon0"
	mkdir -p "$t"
	printf 'coretemp\n' >"$t/name"
	printf '45000\n' >"$t/temp1_input"
	link hwmon "$t"
fi
if [ "$perf" = 1 ]; then
	# perf's RAPL PMU as the kernel's arch/x86/events/rapl.c shows it: 2^-32 J per count
	pmu="$dir/devices/power"
	mkdir -p "$pmu/events" "$dir/bus/event_source/devices"
	ln -sfn ../../../devices/power "$dir/bus/event_source/devices/power"
	printf '24\n' >"$pmu/type"
	mask=
	for ((s = 0; s < sockets; s++)); do
		mask="$mask${mask:+,}$((s * 4))"
		for ((c = s * 4; c < s * 4 + 4; c++)); do
			mkdir -p "$dir/devices/system/cpu/cpu$c/topology"
			printf '%s\n' "$s" >"$dir/devices/system/cpu/cpu$c/topology/physical_package_id"
		done
	done
	printf '%s\n' "$mask" >"$pmu/cpumask"
	event() { # NAME CODE
		printf 'event=%s\n' "$2" >"$pmu/events/energy-$1"
		printf '2.3283064365386962890625e-10\n' >"$pmu/events/energy-$1.scale"
		printf 'Joules\n' >"$pmu/events/energy-$1.unit"
	}
	event pkg 0x02
	if [ "$core" = 1 ]; then event cores 0x01; fi
	if [ "$dram" = 1 ]; then event ram 0x03; fi
	if [ "$psys" = 1 ]; then event psys 0x05; fi
fi
