#!/usr/bin/env bash
# Every binary: --help and --version exit 0; configuration errors exit 2 with
# a message naming the key and file:line. Usage: test_cli.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

check() { # description, expected status, needle, command...
	local what=$1 want=$2 needle=$3
	shift 3
	local out rc
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" -ne "$want" ] || ! grep -qF -- "$needle" <<<"$out"; then
		echo "FAIL: $what: status $rc (want $want), output:"
		sed 's/^/    /' <<<"$out" | head -20
		fails=$((fails + 1))
	else
		echo "ok: $what"
	fi
}

bins=(collectd/kepler-collectd readers/exporter/kepler-exporter readers/stdout/kepler-stdout
      readers/top/kepler-top readers/dataset/kepler-dataset readers/train/kepler-train readers/report/kepler-report readers/push/kepler-push)
for b in "${bins[@]}"; do
	name=$(basename "$b")
	check "$name --help" 0 "Usage: $name [OPTION]..." "$build/$b" --help
	check "$name --version" 0 "$name 0." "$build/$b" --version
	check "$name bad flag" 2 "unknown option '--nope'" "$build/$b" --nope
done

printf 'monitor:\n  interval: 5s\n  intervl: 5s\n' >"$tmp/bad.yaml"
(cd "$tmp" && check "unknown key in bad.yaml" 2 "unknown key 'monitor.intervl' (bad.yaml:3)" \
	"$build/collectd/kepler-collectd" --config bad.yaml)
printf 'monitor:\n  interval: soon\n' >"$tmp/type.yaml"
check "wrong type" 2 "invalid value 'soon' for 'monitor.interval' ($tmp/type.yaml:2)" \
	"$build/collectd/kepler-collectd" --config "$tmp/type.yaml"
printf 'store:\n  retention:\n    snapshots: 0\n' >"$tmp/range.yaml"
check "out of range" 2 "'store.retention.snapshots' ($tmp/range.yaml:3) is out of range" \
	"$build/collectd/kepler-collectd" --config "$tmp/range.yaml"
printf 'monitor: {interval: [\n' >"$tmp/broken.yaml"
check "malformed YAML" 2 "malformed YAML ($tmp/broken.yaml:2" \
	"$build/collectd/kepler-collectd" --config "$tmp/broken.yaml"
check "missing config" 2 "cannot read config file '$tmp/none.yaml'" \
	"$build/collectd/kepler-collectd" --config "$tmp/none.yaml"
# a FIFO as the config file would block the start: refused at once (a test failing here hangs
# no longer than timeout's 60 s)
mkfifo "$tmp/fifo.yaml"
check "a FIFO as the config file" 2 "config file '$tmp/fifo.yaml' is not a regular file" \
	timeout 60 "$build/collectd/kepler-collectd" --config "$tmp/fifo.yaml"
check "a folder as the config file" 2 "config file '$tmp' is a directory" \
	"$build/readers/exporter/kepler-exporter" --config "$tmp"
# values whose form is checked when they are parsed: exit 2 before any meter or store opens
check "gpu.idle-power not watts" 2 "invalid value 'abc' for --gpu.idle-power: expected a power in watts" \
	"$build/collectd/kepler-collectd" --gpu.idle-power abc --store.path "$tmp/never"
check "attribution.idle-watts not ZONE=WATTS" 2 "invalid value 'package=x' for --attribution.idle-watts: expected ZONE=WATTS" \
	"$build/collectd/kepler-collectd" --attribution.idle-watts package=x --store.path "$tmp/never"
check "carbon.intensity not a number" 2 "invalid value '-3' for --carbon.intensity: expected g CO2e per kWh" \
	"$build/collectd/kepler-collectd" --carbon.intensity -3 --store.path "$tmp/never"
printf 'carbon:\n  intensity: lots\n' >"$tmp/carbon.yaml"
check "carbon.intensity in a file" 2 "invalid value 'lots' for 'carbon.intensity' ($tmp/carbon.yaml:2)" \
	"$build/collectd/kepler-collectd" --config "$tmp/carbon.yaml" --store.path "$tmp/never"
[ -e "$tmp/never" ] && { echo "FAIL: a store was made before the bad value was refused"; fails=$((fails + 1)); }
check "dev key as flag" 2 "development setting" \
	"$build/collectd/kepler-collectd" --dev.fake-meter.watts=3
check "exporter flag on collector" 2 "it is one of kepler-exporter" \
	"$build/collectd/kepler-collectd" --web.listen-address=:1

# The collector runs until stopped: brief runs end with SIGTERM after 2 s
# and must exit 0 (a last snapshot, then a clean stop).
brief() { timeout --preserve-status -s TERM 2 "$@"; }
chmod 0711 "$tmp"
mkdir -p "$tmp/pub" && chmod 0777 "$tmp/pub"
collectd=("$build/collectd/kepler-collectd" --store.path "$tmp/pub/store" --monitor.interval 500ms)

# Energy sources: an explicit source that is absent fails clearly; auto
# falls back to the model and says why. (An empty sysfs, so that the result
# is the same on machines with RAPL.)
mkdir -p "$tmp/sysfs"
check "meter.source rapl without powercap" 1 \
	"meter.source rapl: no RAPL: $tmp/sysfs/class/powercap does not exist" \
	"${collectd[@]}" --host.sysfs "$tmp/sysfs" --meter.source rapl
check "meter.source auto falls back: why" 0 "meter rapl not used: no RAPL" \
	brief "${collectd[@]}" --host.sysfs "$tmp/sysfs"
check "meter.source auto falls back: model" 0 "energy source model: package [model:builtin#package]" \
	brief "${collectd[@]}" --host.sysfs "$tmp/sysfs"
"$(dirname "$0")/../../tools/fake-sysfs.sh" "$tmp/rapl" --sockets 2
check "meter.source auto with RAPL" 0 "energy source rapl: package (2 parts) [aggregated-package]" \
	brief "${collectd[@]}" --host.sysfs "$tmp/rapl"
check "bad model file" 1 "cannot open model file $tmp/nope.yaml" \
	"${collectd[@]}" --host.sysfs "$tmp/sysfs" --meter.model-file "$tmp/nope.yaml"
check "model file that is a directory" 1 "cannot read model file $tmp: it is a directory" \
	"${collectd[@]}" --host.sysfs "$tmp/sysfs" --meter.model-file "$tmp"
touch "$tmp/afile"
check "store path that is a file" 1 "the store path '$tmp/afile' is not a directory" \
	"${collectd[@]}" --host.sysfs "$tmp/sysfs" --store.path "$tmp/afile"
check "start-up line" 0 "started: informer procfs; zones package (rapl); one snapshot every 500ms into $tmp/pub/store; no network port" \
	brief "${collectd[@]}" --host.sysfs "$tmp/rapl" --informer procfs --rapl.zones package
check "clean stop" 0 "stopping on Terminated after snapshot" \
	brief "${collectd[@]}" --host.sysfs "$tmp/rapl"

# Meter events: a RAPL counter that goes back (a driver reload) is a reset:
# logged as a warning, counted in the snapshot (kepler_node_meter_resets_total).
"${collectd[@]}" --host.sysfs "$tmp/rapl" --informer procfs --rapl.zones package --store.path "$tmp/ev" \
	>"$tmp/ev.log" 2>&1 &
ev=$!
newest() { "$build/readers/stdout/kepler-stdout" --store.path "$tmp/ev" --format json 2>/dev/null; }
# the counter goes back once the collector has read it (a loaded machine may take a while)
for _ in $(seq 100); do newest | grep -q '"seq":[2-9]' && break; sleep 0.1; done
echo 5 >"$tmp/rapl/devices/virtual/powercap/intel-rapl/intel-rapl:0/energy_uj"
for _ in $(seq 100); do newest | grep -q '"meter_resets":1,' && break; sleep 0.1; done
kill "$ev"; wait "$ev"
if grep -q "meter zone package: 1 counter reset(s) since the last warning (1 since start)" "$tmp/ev.log" &&
	newest | grep -q '"meter_resets":1,'; then
	echo "ok: meter reset logged and counted"
else
	echo "FAIL: meter reset: $(grep -i reset "$tmp/ev.log")"; fails=$((fails + 1))
fi

# Informers: procfs on request; auto falls back from ebpf without privileges.
check "informer procfs" 0 "informer procfs (" \
	brief "${collectd[@]}" --host.sysfs "$tmp/sysfs" --informer procfs
check "informer from a missing procfs" 1 "informer procfs: cannot open /nonexistent" \
	"${collectd[@]}" --host.sysfs "$tmp/sysfs" --informer procfs --host.procfs /nonexistent
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	rm -rf "$tmp/pub/store"
	nobody=(setpriv --reuid 65534 --regid 65534 --clear-groups)
	check "informer auto unprivileged: why" 0 "informer ebpf not used, falling back to procfs: loading the eBPF program needs root" \
		brief "${nobody[@]}" "${collectd[@]}" --host.sysfs /nonexistent --store.group ""
	check "informer ebpf unprivileged" 1 "informer ebpf: loading the eBPF program needs root or CAP_BPF and CAP_PERFMON" \
		"${nobody[@]}" "${collectd[@]}" --host.sysfs /nonexistent --informer ebpf
else
	echo "skip: unprivileged informer checks need root and setpriv"
fi

# store.retention.snapshots as a duration: that many intervals' snapshots (1 s of 200 ms: 5)
# (run until it has made more than the ring keeps, however slow the machine: not for a fixed time)
"$build/collectd/kepler-collectd" --store.path "$tmp/pub/ring" --monitor.interval 200ms --meter.source fake \
	--informer procfs --store.group "" --store.retention.snapshots 1s >"$tmp/ring.log" 2>&1 &
ring_pid=$!
for _ in $(seq 600); do
	newest=$("$build/readers/stdout/kepler-stdout" --store.path "$tmp/pub/ring" --format json 2>/dev/null |
		grep -o '"seq":[0-9]*' | head -1 | cut -d: -f2)
	[ "${newest:-0}" -ge 8 ] && break
	sleep 0.1
done
kill -TERM $ring_pid 2>/dev/null
wait $ring_pid 2>/dev/null
kept=$("$build/readers/stdout/kepler-stdout" --store.path "$tmp/pub/ring" --all --format json 2>/dev/null | wc -l)
if grep -q "store.retention.snapshots 1s: the newest 5 snapshots (intervals of 200ms) are kept" "$tmp/ring.log" &&
	[ "$kept" -eq 5 ]; then
	echo "ok: store.retention.snapshots 1s at 200 ms intervals: the ring holds 5"
else
	echo "FAIL: retention as a duration: $kept snapshots kept (newest seq ${newest:-none}); $(grep -m1 retention "$tmp/ring.log")"
	fails=$((fails + 1))
fi

# mistyped flags: the option meant, by its last part or a value of it; a switch given a separate value
check "--interval" 2 "unknown option '--interval'; did you mean '--monitor.interval'?" \
	"$build/collectd/kepler-collectd" --interval 1s
check "--listen" 2 "unknown option '--listen'; did you mean '--web.listen-address'?" \
	"$build/readers/exporter/kepler-exporter" --listen :9102
check "--jsn" 2 "unknown option '--jsn'; did you mean '--format json'?" \
	"$build/readers/stdout/kepler-stdout" --jsn
check "--kube.enabled true" 2 "--kube.enabled takes its value after '=': --kube.enabled=true (alone, --kube.enabled means true)" \
	"$build/collectd/kepler-collectd" --kube.enabled true

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
