#!/usr/bin/env bash
# Kepler's configuration at the door: kepler-collectd and kepler-exporter
# started with Kepler's ConfigMap (tests/data/kepler/config.yaml, camelCase
# keys) and Kepler's DaemonSet arguments (--config.file, --kube.enable,
# --kube.node-name, repeatable --metrics): both run, the mapped keys take
# effect, each key without a counterpart is warned once by name; kepler-c's
# own unknown keys stay errors.
# Usage: test_kepler_config.sh BUILD_DIR
set -uo pipefail
build=$1
command -v curl >/dev/null || { echo "SKIP: curl missing (tools/setup.sh installs it)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for the collector"; exit 77; }
. "$(dirname "$0")/../lib.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
conf=$src/tests/data/kepler/config.yaml
port=$(free_port)
env -u HOST_IP "$build/collectd/kepler-collectd" --config.file="$conf" --kube.enable --kube.node-name=node-7 \
	--store.path "$tmp/store" --store.group "" --kube.log-dir "$tmp/no-log-dir" >"$tmp/collectd.log" 2>&1 &
pids+=($!)
"$build/readers/exporter/kepler-exporter" --config.file="$conf" --kube.enable --kube.node-name=node-7 \
	--metrics=node --metrics pod --store.path "$tmp/store" --web.listen-address 127.0.0.1:$port \
	>"$tmp/exporter.log" 2>&1 &
pids+=($!)
sleep 4
m=$(curl -s "http://127.0.0.1:$port/metrics")
grep -q '^kepler_node_cpu_joules_total{node_name="node-7",path="fake:package",zone="package"}' <<<"$m" &&
	ok "both run: the exporter serves the collector's store, node_name node-7 (--kube.node-name), the fake meter (dev.fake-cpu-meter.enabled)" ||
	fail "no node series from the exporter: $(head -c 400 <<<"$m"); $(tail -3 "$tmp/collectd.log" "$tmp/exporter.log")"
iv=$(awk '/^kepler_snapshot_interval_seconds/ {print $2}' <<<"$m")
awk -v v="${iv:-0}" 'BEGIN { exit !(v > 0.8 && v < 1.5) }' && ok "monitor.interval 1s from the ConfigMap (interval $iv s)" ||
	fail "interval '$iv'"
grep -q "levels node,pod;" "$tmp/exporter.log" && ! grep -q '^kepler_process_' <<<"$m" &&
	ok "--metrics node --metrics pod (repeatable, as Kepler's) gives levels node,pod" || fail "levels: $(grep started "$tmp/exporter.log")"
grep -q "kube: no kube.kubelet-url and no HOST_IP: names come from the kubelet's logs" "$tmp/collectd.log" &&
	ok "--kube.enable with kube.podInformer.mode kubelet and no HOST_IP: names from the log links" ||
	fail "kube source: $(grep kube "$tmp/collectd.log")"
for key in monitor.staleness exporter.stdout.enabled exporter.prometheus.enabled exporter.prometheus.debugCollectors \
	debug.pprof.enabled kube.config experimental.hwmon.forceEnabled; do
	for log in collectd exporter; do
		n=$(grep -c "Kepler's key '$key' (.*config.yaml:[0-9]*) has no kepler-c counterpart and is ignored: " "$tmp/$log.log")
		[ "$n" -eq 1 ] || fail "$log: '$key' warned $n times"
	done
done
n=$(grep -c "has no kepler-c counterpart" "$tmp/collectd.log")
[ "$n" -eq 7 ] && ok "the 7 keys without a counterpart each warned once, by name, by both programs" ||
	fail "$n warnings: $(grep counterpart "$tmp/collectd.log")"
for mapped in monitor.maxTerminated monitor.minTerminatedEnergyThreshold exporter.prometheus.metricsLevel \
	web.listenAddresses kube.nodeName kube.podInformer rapl.zones dev.fake-cpu-meter experimental.gpu.enabled \
	experimental.gpu.idlePower experimental.platform.redfish; do
	grep -q "'$mapped" "$tmp/collectd.log" "$tmp/exporter.log" && fail "mapped key $mapped was warned about"
done
grep -E " error:" "$tmp/collectd.log" "$tmp/exporter.log" && fail "errors logged"

# a Kepler flag without a counterpart: accepted, warned once; apiserver mode: warned
out=$(timeout 3 "$build/collectd/kepler-collectd" --config.file="$conf" --debug.pprof --experimental.gpu.dcgm-endpoint localhost:9400 \
	--store.path "$tmp/store2" --store.group "" 2>&1)
grep -q "Kepler's flag '--debug.pprof' has no kepler-c counterpart and is ignored: there is no pprof in C" <<<"$out" &&
	grep -q "Kepler's flag '--experimental.gpu.dcgm-endpoint'" <<<"$out" &&
	ok "Kepler's flags without a counterpart (--debug.pprof, --experimental.gpu.dcgm-endpoint localhost:9400) are warned, their values skipped" ||
	fail "flags: $(head -5 <<<"$out")"
printf 'kube:\n  podInformer:\n    mode: apiserver\n' >"$tmp/apiserver.yaml"
out=$("$build/collectd/kepler-collectd" --config.file "$tmp/apiserver.yaml" --help 2>&1 >/dev/null; timeout 2 "$build/collectd/kepler-collectd" --config.file "$tmp/apiserver.yaml" --store.path "$tmp/store3" --store.group "" --meter.source fake 2>&1)
grep -q "Kepler's kube.podInformer.mode 'apiserver' .* is not available" <<<"$out" && ok "kube.podInformer.mode apiserver: warned" ||
	fail "apiserver: $(head -3 <<<"$out")"
# kepler-c's own unknown keys, and unknown keys under Kepler's sections, stay errors
printf 'monitor:\n  interval: 1s\n  maxTerminatd: 5\n' >"$tmp/typo.yaml"
out=$("$build/collectd/kepler-collectd" --config "$tmp/typo.yaml" 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "unknown key 'monitor.maxTerminatd'" <<<"$out" && ok "an unknown key is still an error: $out" ||
	fail "typo: rc $rc: $out"
printf 'exporter:\n  prometheus:\n    nosuch: 1\n' >"$tmp/typo2.yaml"
out=$("$build/readers/exporter/kepler-exporter" --config "$tmp/typo2.yaml" 2>&1)
[ $? -eq 2 ] && grep -q "unknown key 'exporter.prometheus.nosuch'" <<<"$out" && ok "an unknown key in Kepler's sections too" ||
	fail "typo2: $out"
out=$("$build/readers/exporter/kepler-exporter" --store.map-size 1GiB 2>&1)
[ $? -eq 2 ] && grep -q "is not an option of kepler-exporter" <<<"$out" && ok "a kepler-c flag given to the wrong program is still an error" ||
	fail "wrong program: $out"
finish kepler_config
