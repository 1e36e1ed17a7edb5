#!/usr/bin/env bash
# What deploy/kubernetes ships, checked without a cluster:
#  - the PrometheusRule's groups pass `promtool check rules` and the unit
#    tests of every alert (tests/data/kepler-c.rules.test.yaml);
#  - every query of the Grafana dashboard parses and returns series from a
#    real Prometheus scraping a live exporter (fake meter; a pod named
#    through the log source; a VM-like process);
#  - the ConfigMap's config.yaml is one kepler-c accepts (both programs).
# Rendering with kustomize and validating against the Kubernetes schemas
# needs kubectl and npm: tools/test-k8s-manifests.sh.
# Usage: test_deploy.sh BUILD_DIR
set -uo pipefail
build=$1
for tool in prometheus promtool curl jq; do
	command -v $tool >/dev/null || { echo "SKIP: $tool missing (tools/setup.sh installs it)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for the collector and a test cgroup"; exit 77; }
. "$(dirname "$0")/../lib.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
base=$src/deploy/kubernetes/base
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ---- alerts ----
mkdir -p "$tmp/rules"
sed -n '/^spec:/,$p' "$base/prometheusrule.yaml" | tail -n +2 | sed 's/^  //' >"$tmp/rules/kepler-c.rules.yaml"
cp "$src/tests/data/kepler-c.rules.test.yaml" "$tmp/rules/"
out=$(promtool check rules "$tmp/rules/kepler-c.rules.yaml" 2>&1) && ok "promtool check rules: $(grep -o '[0-9]* rules found' <<<"$out")" ||
	fail "promtool check rules: $out"
n=$(grep -c '^  - alert:' <<<"$(sed 's/^    //' "$tmp/rules/kepler-c.rules.yaml")")
tested=$(grep -o 'alertname: [A-Za-z]*' "$tmp/rules/kepler-c.rules.test.yaml" | sort -u | wc -l)
records=$(grep -o 'record: [a-z_:0-9]*' "$tmp/rules/kepler-c.rules.yaml" | sort -u | wc -l)
records_tested=$(grep -o '^      - expr: [a-z_:0-9]*$' "$tmp/rules/kepler-c.rules.test.yaml" | sort -u | wc -l)
out=$(cd "$tmp/rules" && promtool test rules kepler-c.rules.test.yaml 2>&1) && [ "$tested" -eq "$n" ] &&
	[ "$records_tested" -eq "$records" ] && [ "$records" -gt 0 ] &&
	ok "promtool test rules: all $n alerts tested, fire and stay quiet as expected; all $records recording rules (energy and CO2e per namespace, per owner and per team, an hour and a day) give the sums of their pods" ||
	fail "promtool test rules ($tested of $n alerts, $records_tested of $records recording rules tested): $out"

# ---- the ConfigMap's config ----
sed -n '/config.yaml: |/,$p' "$base/configmap.yaml" | tail -n +2 | sed 's/^    //' >"$tmp/config.yaml"
for prog in collectd/kepler-collectd readers/exporter/kepler-exporter; do
	out=$("$build/$prog" --config "$tmp/config.yaml" --help 2>&1 >/dev/null) && [ -z "$out" ] ||
		fail "$prog refuses the ConfigMap's config.yaml: $out"
done
ok "kepler-collectd and kepler-exporter accept the ConfigMap's config.yaml"

# ---- the dashboard against a live exporter ----
cgroot=/sys/fs/cgroup/cpu
[ -d "$cgroot" ] || cgroot=/sys/fs/cgroup
uid=3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a99 id=$(printf 'd1%062d' 0)
cg=$cgroot/kubepods/besteffort/pod$uid/$id
at_exit+=("rmdir '$cg' '$cgroot/kubepods/besteffort/pod$uid' '$cgroot/kubepods/besteffort' '$cgroot/kubepods' 2>/dev/null")
busy='while :; do for ((i = 0; i < 2000; i++)); do :; done; sleep 0.05; done'
mkdir -p "$cg" && { bash -c "echo \$\$ > '$cg/cgroup.procs' && exec bash -c '$busy'" & pids+=($!); } ||
	fail "cannot create $cg"
mkdir -p "$tmp/log/containers" "$tmp/bin"
ln -s "/var/log/pods/shop_web-1_$uid/nginx/0.log" "$tmp/log/containers/web-1_shop_nginx-$id.log"
cp "$(command -v bash)" "$tmp/bin/qemu-system-x86_64"
"$tmp/bin/qemu-system-x86_64" -c "$busy" -name guest=vm-1 &
pids+=($!)
"$build/collectd/kepler-collectd" --store.path "$tmp/store" --meter.source fake --monitor.interval 1s --store.group "" \
	--kube.enabled --kube.pod-source logs --kube.log-dir "$tmp/log" --kube.node-name worker-9 >"$tmp/collectd.log" 2>&1 &
pids+=($!)
eport=$(free_port) pport=$(free_port)
"$build/readers/exporter/kepler-exporter" --store.path "$tmp/store" --web.listen-address 127.0.0.1:$eport >"$tmp/exporter.log" 2>&1 &
pids+=($!)
printf 'global: { scrape_interval: 1s, scrape_timeout: 1s }\nscrape_configs:\n  - job_name: kepler-c\n    static_configs: [ { targets: ["127.0.0.1:%s"] } ]\n' $eport >"$tmp/prometheus.yml"
prometheus --config.file "$tmp/prometheus.yml" --storage.tsdb.path "$tmp/tsdb" --web.listen-address 127.0.0.1:$pport \
	>"$tmp/prometheus.log" 2>&1 &
pids+=($!)
dash=$base/dashboards/kepler-c.json
# Queries are evaluated at the newest scrape that succeeded: on a saturated machine a 1 s scrape
# can time out, and its staleness markers would empty an instant query of a gauge at "now"
good_time() {
	curl -s --data-urlencode 'query=max_over_time(timestamp(up{job="kepler-c"} == 1)[2m:1s])' \
		"http://127.0.0.1:$pport/api/v1/query" | jq -r '.data.result[0].value[1] // empty' 2>/dev/null
}
promq() { # promq QUERY: its answer at good_time
	local t
	t=$(good_time)
	curl -s --data-urlencode "query=$1" ${t:+--data-urlencode "time=$t"} "http://127.0.0.1:$pport/api/v1/query"
}
# until every dashboard query returns series (rates need two scrapes of each
# series, a VM and a pod found): however late a loaded machine gets there
dash_ready() {
	local expr q
	while IFS= read -r expr; do
		q=${expr//\$node/.*}
		q=${q//\$zone/package}
		q=${q//\$__range/5m}
		[ "$(promq "$q" | jq '.data.result | length' 2>/dev/null)" -ge 1 ] 2>/dev/null || return 1
	done < <(jq -r '.panels[].targets[]?.expr' "$dash")
}
eventually 180 dash_ready || echo "not every dashboard query returned series in 180 s: the checks below say which"
sleep 2 # two more scrapes: the queries over the last minute see more than one sample
jq -e '.panels | length > 10' "$dash" >/dev/null || fail "the dashboard has no panels"
nq=0 bad=0
while IFS= read -r expr; do
	nq=$((nq + 1))
	q=${expr//\$node/.*}
	q=${q//\$zone/package}
	q=${q//\$__range/5m}
	r=$(promq "$q")
	if [ "$(jq -r '.status' <<<"$r")" != success ]; then
		fail "dashboard query does not parse: $expr: $(jq -r '.error' <<<"$r")"
		bad=$((bad + 1))
	elif [ "$(jq '.data.result | length' <<<"$r")" -lt 1 ]; then
		fail "dashboard query returns no series: $q"
		bad=$((bad + 1))
	fi
done < <(jq -r '.panels[].targets[]?.expr' "$dash")
[ $bad -eq 0 ] && ok "all $nq dashboard queries parse and return series from the live exporter" || fail "$bad of $nq dashboard queries"
for v in $(jq -r '.templating.list[] | select(.type == "query") | .definition' "$dash" | sed -E 's/label_values\(([a-z_]+), ([a-z_]+)\)/\1:\2/'); do
	vals=$(curl -s -G --data-urlencode "match[]=${v%%:*}" "http://127.0.0.1:$pport/api/v1/label/${v##*:}/values" | jq -r '.data | join(",")')
	[ -n "$vals" ] && ok "dashboard variable label_values(${v%%:*}, ${v##*:}) = $vals" || fail "variable $v: no values"
done
# Kepler's shipped dashboard (compose/default/grafana/dashboards/latest/dashboard.json): its queries, unchanged
nk=0
while IFS= read -r kq; do
	[ -z "$kq" ] && continue
	nk=$((nk + 1))
	r=$(promq "$kq")
	[ "$(jq -r '.status' <<<"$r")" = success ] && [ "$(jq '.data.result | length' <<<"$r")" -ge 1 ] ||
		fail "Kepler's dashboard query returns nothing: $kq: $(head -c 200 <<<"$r")"
done <<'KQ'
sum by (zone) (kepler_node_cpu_watts)
sum by (zone) (kepler_node_cpu_active_watts)
sum by (zone) (kepler_node_cpu_idle_watts)
count by (model_name) (kepler_node_cpu_info)
topk(10, sum by (comm) (kepler_process_cpu_watts{zone="package"}))
topk(10, sum by (container_name) (kepler_container_cpu_watts{zone="package"}))
topk(10, sum by (pod_namespace, zone) (kepler_pod_cpu_watts))
topk(10, sum by (vm_name) (kepler_vm_cpu_watts{zone="package"}))
label_join(count by (pid, comm) (kepler_process_cpu_watts), "pid_comm", ":", "pid", "comm")
sum by (node_name) (kepler_node_cpu_joules_total)
KQ
ok "$nk of Kepler's own dashboard queries return series unchanged"
r=$(promq 'topk(10, sum by (pod_namespace, pod_name) (kepler_pod_cpu_watts{zone="package"}))' |
	jq -r '.data.result[].metric | .pod_namespace + "/" + .pod_name')
[ "$r" = shop/web-1 ] && ok "the Top pods panel names shop/web-1" ||
	fail "Top pods: $r; the exporter's pods now: $(curl -s "http://127.0.0.1:$eport/metrics" | grep '^kepler_pod_cpu_watts' | head -5)"
finish deploy
