#!/usr/bin/env bash
# End to end with a real Prometheus server: kepler-collectd (fake meter,
# eBPF or procfs informer) and kepler-exporter run (until Prometheus holds
# 32 successful scrapes) with workloads
# in a docker-like container cgroup, a pod (kubepods cgroupfs layout, two
# containers) and a qemu-like VM process; Prometheus scrapes every 2 s
# with a 2 s timeout; every query reads a range, never one instant (a late
# scrape's staleness marker).
# PromQL then checks, at every second of the last minute, that per zone
# the process watts add up to the node's active watts and that containers,
# pods and VMs equal the sums of their members, and that rate() of the
# node counters is positive.
# Usage: test_prometheus.sh BUILD_DIR [SECONDS]
set -uo pipefail
build=$1
run_s=${2:-65}
for tool in prometheus curl jq; do
	command -v $tool >/dev/null || { echo "SKIP: $tool missing (tools/setup.sh installs it)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for the collector and test cgroups"; exit 77; }
. "$(dirname "$0")/../lib.sh"
cgroups=()
at_exit+=('for cg in "${cgroups[@]}"; do rmdir "$cg" 2>/dev/null; done')
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# A busy loop at roughly half a CPU: bursts of shell arithmetic, then a short sleep.
busy='while :; do for ((i = 0; i < 3000; i++)); do :; done; sleep 0.02; done'

# start_in_cgroup DIR: a busy worker whose cgroup (v1 cpu controller, or v2) is DIR
start_in_cgroup() {
	mkdir -p "$1" 2>/dev/null && cgroups+=("$1") || return 1
	bash -c "echo \$\$ > '$1/cgroup.procs' && exec bash -c '$busy'" &
	pids+=($!)
}
cgroot=/sys/fs/cgroup/cpu
[ -d "$cgroot" ] || cgroot=/sys/fs/cgroup
id1=$(printf 'c1%062d' 0) id2=$(printf 'c2%062d' 0) id3=$(printf 'c3%062d' 0)
uid=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0
have_cg=1
start_in_cgroup "$cgroot/docker/$id1" &&
	start_in_cgroup "$cgroot/kubepods/burstable/pod$uid/$id2" &&
	start_in_cgroup "$cgroot/kubepods/burstable/pod$uid/$id3" || have_cg=0
[ $have_cg -eq 1 ] && ok "workloads in a docker container and a two-container pod ($cgroot)" ||
	echo "note: cannot create cgroups under $cgroot: container and pod sums are checked on no members"
# parents too, removed after their children (cleanup goes in order)
cgroups+=("$cgroot/kubepods/burstable/pod$uid" "$cgroot/kubepods/burstable" "$cgroot/kubepods" "$cgroot/docker")
# a "VM": bash under the name of qemu, with a uuid and a guest name
mkdir -p "$tmp/bin" && cp "$(command -v bash)" "$tmp/bin/qemu-system-x86_64"
"$tmp/bin/qemu-system-x86_64" -c "$busy" -uuid 5a6b7c8d-0000-4000-8000-00000000beef -name guest=test-vm &
pids+=($!)
# and a plain process
bash -c "$busy" &
pids+=($!)

"$build/collectd/kepler-collectd" --store.path "$tmp/store" --meter.source fake --monitor.interval 1s \
	--store.group "" --log.level warn >"$tmp/collectd.log" 2>&1 &
pids+=($!)
eport=$(free_port)
"$build/readers/exporter/kepler-exporter" --store.path "$tmp/store" \
	--web.listen-address 127.0.0.1:$eport >"$tmp/exporter.log" 2>&1 &
pids+=($!)
pport=$(free_port)
cat >"$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 2s
  scrape_timeout: 2s
scrape_configs:
  - job_name: kepler
    static_configs:
      - targets: ['127.0.0.1:$eport']
YML
prometheus --config.file "$tmp/prometheus.yml" --storage.tsdb.path "$tmp/tsdb" \
	--web.listen-address 127.0.0.1:$pport >"$tmp/prometheus.log" 2>&1 &
pids+=($!)
# q EXPR: the values of an instant query, one per line
q() {
	curl -s --data-urlencode "query=$1" "http://127.0.0.1:$pport/api/v1/query" |
		jq -r 'if .status == "success" then .data.result[].value[1] else "ERROR " + .error end'
}
# until Prometheus holds a minute of successful scrapes (30 at 2 s), counted, not timed: a
# loaded machine gets there later
want=$((run_s / 2))
echo "running collector, exporter and Prometheus until $want successful scrapes ..."
scraped() { [ "$(q 'sum_over_time(up{job="kepler"}[10m])' | cut -d. -f1)" -ge "$want" ] 2>/dev/null; }
eventually 1200 scraped
scrapes=$(q 'sum_over_time(up{job="kepler"}[10m])')
[ "${scrapes:-0}" -ge "$want" ] 2>/dev/null && ok "Prometheus scraped the exporter $scrapes times (up == 1)" ||
	fail "only '$scrapes' successful scrapes: $(tail -3 "$tmp/prometheus.log")"

# check NAME LEFT RIGHT MIN_GROUPS: at every second of the last minute, max |LEFT - RIGHT| over groups
check() {
	local name=$1 expr="max_over_time((max(abs(($2) - ($3))))[55s:1s])" groups
	local worst
	worst=$(q "$expr")
	# over the same minute: an instant query might meet a staleness marker of a late scrape
	groups=$(q "max_over_time((count(($2) - ($3)))[55s:1s])")
	if [ -n "$worst" ] && [ "${groups:-0}" -ge "$4" ] && awk -v w="$worst" 'BEGIN { exit !(w < 1e-6) }'; then
		ok "$name: $groups groups, worst difference over 55 s: $worst W"
	else
		fail "$name: worst '$worst', groups '$groups' (need $4)"
	fi
}
check "Σ process watts + unattributed == node active watts, per zone" \
	'sum by (zone) (kepler_process_cpu_watts)' \
	'sum by (zone) (kepler_node_cpu_active_watts) - sum by (zone) (kepler_node_cpu_unattributed_watts)' 3
ncg=$((have_cg * 3))
check "Σ process watts == container watts" \
	'sum by (zone, container_id) (kepler_process_cpu_watts{container_id!=""})' \
	'sum by (zone, container_id) (kepler_container_cpu_watts)' $ncg
check "Σ container watts == pod watts" \
	'sum by (zone, pod_id) (kepler_container_cpu_watts{pod_id!=""})' \
	'sum by (zone, pod_id) (kepler_pod_cpu_watts)' $have_cg
check "Σ process watts == VM watts" \
	'sum by (zone, vm_id) (kepler_process_cpu_watts{vm_id!=""})' \
	'sum by (zone, vm_id) (kepler_vm_cpu_watts)' 3
active=$(q 'min(sum by (zone) (max_over_time(kepler_node_cpu_active_watts[1m])))')
awk -v a="${active:-0}" 'BEGIN { exit !(a > 0) }' && ok "node active watts > 0 in every zone (min $active W)" ||
	fail "node active watts: '$active'"
rates=$(q 'rate(kepler_node_cpu_joules_total[1m]) > 0' | wc -l)
[ "$rates" -eq 3 ] && ok "rate(kepler_node_cpu_joules_total[1m]) > 0 for all 3 zones" || fail "positive rates: $rates"
vmname=$(curl -s --data-urlencode 'query=last_over_time(kepler_vm_cpu_watts{zone="package"}[1m])' "http://127.0.0.1:$pport/api/v1/query" |
	jq -r '.data.result[0].metric.vm_name')
[ "$vmname" = test-vm ] && ok "the VM is named from -name guest=test-vm" || fail "vm_name '$vmname'"
if [ $have_cg -eq 1 ]; then
	rt=$(curl -s --data-urlencode "query=last_over_time(kepler_container_cpu_watts{zone=\"package\",container_id=\"$id1\"}[1m])" \
		"http://127.0.0.1:$pport/api/v1/query" | jq -r '.data.result[0].metric.runtime')
	[ "$rt" = docker ] && ok "container $id1 has runtime docker" || fail "runtime '$rt'"
fi
grep -q " error" "$tmp/exporter.log" && fail "exporter logged errors: $(grep ' error' "$tmp/exporter.log" | head -3)"
finish Prometheus
