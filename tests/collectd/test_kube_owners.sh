#!/usr/bin/env bash
# Chargeback by owner and by team, end to end. Six pods of real processes in
# real cgroups (the kubelet's cgroupfs layout), named by a local HTTPS
# kubelet (tests/fakes/fake_kubelet.py) whose PodList gives each its
# controller and labels as Kubernetes does: two pods of Deployment "web"
# (ReplicaSet web-<hash>, the pod-template-hash label), StatefulSet "db",
# a pod of CronJob "nightly" (Job nightly-<minutes>), Job "migrate-2" and a
# bare pod; team labels on all but the bare pod. The collector records
# --kube.pod-labels team,app.kubernetes.io/part-of (intensity 350 g/kWh, a 2 s tier: reports rest on tier records); then:
#   - kepler-report --by owner and --by label:team: every row's energy per
#     zone equals the sum of its pods' snapshot deltas over the window, to
#     the µJ (the snapshots read back with kepler-stdout), and the rows add
#     up to the report --by pod's;
#   - the exporter serves kepler_pod_info (owner and label_team) and a real
#     Prometheus joins it: energy by owner and by team with
#     "* on (pod_id) group_left(...) kepler_pod_info".
# Usage: test_kube_owners.sh BUILD_DIR
set -uo pipefail
build=$1
for tool in prometheus curl jq openssl python3; do
	command -v $tool >/dev/null || { echo "SKIP: $tool missing (tools/setup.sh installs it)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for the collector and test cgroups"; exit 77; }
. "$(dirname "$0")/../lib.sh"
fakes=$(cd "$(dirname "$0")/../fakes" && pwd)
stdout=$build/readers/stdout/kepler-stdout
report=$build/readers/report/kepler-report
cgroups=()
at_exit+=('for cg in "${cgroups[@]}"; do rmdir "$cg" 2>/dev/null; done')
busy='while :; do for ((i = 0; i < 1500; i++)); do :; done; sleep 0.05; done'
cgroot=/sys/fs/cgroup/cpu
[ -d "$cgroot" ] || cgroot=/sys/fs/cgroup
hex() { printf '%s%062d' "$1" 0; }
uid() { printf '%08d-0000-4000-8000-%012d' "$1" "$1"; }

# name ns uid container-id owner-kind owner-name labels(JSON members)
pods=(
	"web-5f7c9d8b6-a4x2k shop $(uid 1) $(hex e1) ReplicaSet web-5f7c9d8b6 \"pod-template-hash\": \"5f7c9d8b6\", \"team\": \"shop\", \"app.kubernetes.io/part-of\": \"store\""
	"web-5f7c9d8b6-q9z8m shop $(uid 2) $(hex e2) ReplicaSet web-5f7c9d8b6 \"pod-template-hash\": \"5f7c9d8b6\", \"team\": \"shop\", \"app.kubernetes.io/part-of\": \"store\""
	"db-0 shop $(uid 3) $(hex e3) StatefulSet db \"team\": \"shop\", \"app.kubernetes.io/part-of\": \"store\""
	"nightly-29395260-7xk2p data $(uid 4) $(hex e4) Job nightly-29395260 \"team\": \"data\""
	"migrate-2-bb7fd data $(uid 5) $(hex e5) Job migrate-2 \"team\": \"data\""
	"adhoc data $(uid 6) $(hex e6) - - \"run\": \"adhoc\""
)
group=$cgroot/kubepods/besteffort
items=""
for p in "${pods[@]}"; do
	read -r name ns u cid okind oname labels <<<"$p"
	dir=$group/pod$u/$cid
	mkdir -p "$dir" || skip "cannot create cgroups under $cgroot"
	cgroups=("$dir" "$group/pod$u" "${cgroups[@]}")
	bash -c "echo \$\$ > '$dir/cgroup.procs' && exec bash -c '$busy'" &
	pids+=($!)
	owner=""
	api=apps/v1
	[ "$okind" = Job ] && api=batch/v1
	[ "$okind" != - ] && owner=", \"ownerReferences\": [{\"apiVersion\": \"$api\", \"kind\": \"$okind\", \"name\": \"$oname\", \"uid\": \"$(uid 9)\", \"controller\": true, \"blockOwnerDeletion\": true}]"
	items+="${items:+,}
 {\"metadata\": {\"name\": \"$name\", \"namespace\": \"$ns\", \"uid\": \"$u\", \"labels\": {$labels}$owner},
  \"spec\": {\"containers\": [{\"name\": \"main\"}]},
  \"status\": {\"phase\": \"Running\", \"qosClass\": \"BestEffort\", \"containerStatuses\": [{\"name\": \"main\", \"state\": {\"running\": {}}, \"ready\": true, \"restartCount\": 0, \"image\": \"x\", \"imageID\": \"\", \"containerID\": \"containerd://$cid\", \"started\": true}]}}"
done
cgroups+=("$group" "$cgroot/kubepods")
printf '{"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [%s\n]}\n' "$items" >"$tmp/pods.json"
jq -e '.items | length == 6' "$tmp/pods.json" >/dev/null && ok "6 pods of 5 owners in real cgroups ($cgroot)" ||
	{ fail "the test's PodList is not JSON"; finish kube_owners; }

test_certs kubelet worker-1 || { fail "openssl could not make the test certificates"; finish kube_owners; }
echo "token-$RANDOM$RANDOM" >"$tmp/token"
chgrp "$(id -gn kepler 2>/dev/null || echo root)" "$tmp/token" && chmod 0640 "$tmp/token"
cp "$tmp/token" "$tmp/kubelet-token"
echo ok >"$tmp/mode"
kport=$(free_port)
python3 "$fakes/fake_kubelet.py" $kport "$tmp/kubelet.crt" "$tmp/kubelet.key" "$tmp/pods.json" \
	"$tmp/kubelet-token" "$tmp/mode" >"$tmp/fake-kubelet.log" 2>&1 &
pids+=($!)
store=$tmp/store
"$build/collectd/kepler-collectd" --store.path "$store" --meter.source fake --monitor.interval 1s \
	--store.group "" --kube.enabled --kube.poll-interval 2s --kube.pod-source kubelet \
	--kube.kubelet-url "https://127.0.0.1:$kport" --kube.token-file "$tmp/token" --kube.ca-file "$tmp/ca.crt" \
	--kube.node-name worker-1 --kube.pod-labels "team, app.kubernetes.io/part-of" --carbon.intensity 350 --store.tiers 2s:1h >"$tmp/collector.log" 2>&1 &
pids+=($!)

# until a snapshot names all six pods with their owners (however late a loaded machine polls)
owned() {
	[ "$("$stdout" --store.path "$store" --format json --level pod 2>/dev/null |
		jq '[.pods[] | select(.pod_namespace == "shop" or .pod_namespace == "data")] | length')" = 6 ]
}
eventually 120 owned || { fail "no snapshot names the 6 pods in 120 s: $(tail -3 "$tmp/collector.log")"; finish kube_owners; }
j=$("$stdout" --store.path "$store" --format json --level pod)
store_labels='team=shop,app.kubernetes.io/part-of=store'
want="adhoc||| db-0|StatefulSet|db|$store_labels migrate-2-bb7fd|Job|migrate-2|team=data nightly-29395260-7xk2p|CronJob|nightly|team=data web-5f7c9d8b6-a4x2k|Deployment|web|$store_labels web-5f7c9d8b6-q9z8m|Deployment|web|$store_labels "
got=$(jq -r '.pods[] | select(.pod_namespace == "shop" or .pod_namespace == "data") | "\(.pod_name)|\(.owner_kind)|\(.owner_name)|\(.labels)"' <<<"$j" | sort | tr '\n' ' ')
[ "$got" = "$want" ] && ok "kepler-stdout: each pod's owner (ReplicaSet -> Deployment web, Job nightly-29395260 -> CronJob nightly, Job migrate-2 kept) and labels in kube.pod-labels' order" ||
	fail "owners and labels: got '$got', want '$want'"

# the window: from a snapshot naming them to 8 snapshots later
a=$(store_seq "$store")
wait_seq "$store" $((a + 8)) || fail "the collector stopped"
b=$((a + 8))
"$stdout" --store.path "$store" --format json --all --level pod >"$tmp/all.jsonl"
since=$(jq -r "select(.seq == $a) | .timestamp" "$tmp/all.jsonl")
until=$(jq -r "select(.seq == $b) | .timestamp" "$tmp/all.jsonl")
[ -n "$since" ] && [ -n "$until" ] || fail "snapshots $a and $b not in the ring"
# the pods' deltas of snapshots a+1..b, summed by a key: "KEY ZONE µJ" lines
sums() { # sums JQ-KEY-EXPR [JQ-POD-FILTER]: by default the test's pods (namespaces shop and data)
	local only=${2:-'.pod_namespace == "shop" or .pod_namespace == "data"'}
	jq -r --argjson a "$a" --argjson b "$b" "select(.seq > \$a and .seq <= \$b) | .pods[] | select($only) | . as \$p | .zones[] | \"\(\$p | $1) \(.name) \(.delta_uj)\"" "$tmp/all.jsonl" |
		awk '{ s[$1 " " $2] += $3 } END { for (k in s) printf "%s %d\n", k, s[k] }' | sort
}
rows() { # rows BY JQ-KEY-EXPR: the report's rows of the window as "KEY ZONE µJ"
	"$report" --store.path "$store" --since "$since" --until "$until" --by "$1" --format json 2>"$tmp/report.err" |
		jq -r ".rows[] | . as \$r | .zones[] | \"\(\$r | $2) \(.name) \(.energy_uj)\"" | sort
}
okey='"\(.pod_namespace)/\(if .owner_kind == "" then "-" else .owner_kind + "/" + .owner_name end)"'
want=$(sums "$okey")
got=$(rows owner '"\(.pod_namespace)/\(if .owner_kind == "" then "-" else .owner_kind + "/" + .owner_name end)"' | grep -E '^(shop|data)/')
[ -n "$want" ] && [ "$got" = "$want" ] &&
	ok "kepler-report --by owner: $(wc -l <<<"$got") rows (owner x zone) equal the sums of their pods' snapshots $((a + 1))-$b to the µJ" ||
	fail "--by owner: $(diff <(echo "$want") <(echo "$got") | head -6) $(cat "$tmp/report.err")"
grep -q "^shop/Deployment/web " <<<"$got" && grep -q "^data/CronJob/nightly " <<<"$got" && grep -q "^data/- " <<<"$got" ||
	fail "--by owner rows: $got"
lkey='(.labels | split(",") | map(select(startswith("team="))) | if length == 0 then "(none)" else .[0][5:] end)'
# every pod of the node: (none) holds, beside the bare pod, any other pod the host has (another
# job's kubepods cgroups, named by no kubelet), as the report's row does
want=$(sums "$lkey" true)
got=$(rows label:team '.label_value')
[ -n "$want" ] && [ "$got" = "$want" ] && [ "$(cut -d' ' -f1 <<<"$got" | sort -u | tr '\n' ' ')" = "(none) data shop " ] &&
	ok "kepler-report --by label:team: rows shop, data and (none) equal their pods' sums to the µJ" ||
	fail "--by label:team: $(diff <(echo "$want") <(echo "$got") | head -6)"
# every --by adds up to the same total per zone (the node's other pods in the (none) and owner rows too)
total() { "$report" --store.path "$store" --since "$since" --until "$until" --by "$1" --format json |
	jq -r '[.rows[].zones[]] | group_by(.name) | map("\(.[0].name) \(map(.energy_uj) | add) \(map(.co2e_mg // 0) | add)") | join(" ")'; }
t_pod=$(total pod)
[ "$(total owner)" = "$t_pod" ] && [ "$(total label:team)" = "$t_pod" ] &&
	ok "--by owner and --by label:team add up to --by pod's totals ($t_pod)" ||
	fail "totals: pod '$t_pod', owner '$(total owner)', label:team '$(total label:team)'"
t=$("$report" --store.path "$store" --since "$since" --until "$until" --by owner)
grep -Eq "^shop +Deployment/web " <<<"$t" && grep -Eq "^data +\(none\) " <<<"$t" &&
	ok "the table: NAMESPACE and OWNER (kind/name; (none) for bare pods)" || fail "table: $t"
echo "$t"
"$report" --store.path "$store" --by label:Bad/Key! >/dev/null 2>"$tmp/e"
[ $? -eq 2 ] && grep -q "label key\|label:KEY" "$tmp/e" && ok "--by label: with an invalid key: exit 2, said" ||
	fail "--by label:Bad/Key!: $(cat "$tmp/e")"

# kepler_pod_info through a real Prometheus: energy by owner and by team with one join
eport=$(free_port) pport=$(free_port)
start_exporter_for "$store" $eport
cat >"$tmp/prometheus.yml" <<YML
global: { scrape_interval: 1s, scrape_timeout: 1s }
scrape_configs:
  - job_name: kepler
    static_configs: [ { targets: ['127.0.0.1:$eport'] } ]
YML
prometheus --config.file "$tmp/prometheus.yml" --storage.tsdb.path "$tmp/tsdb" \
	--web.listen-address 127.0.0.1:$pport >"$tmp/prometheus.log" 2>&1 &
pids+=($!)
m() { curl -s "http://127.0.0.1:$eport/metrics"; }
info_line='kepler_pod_info{label_app_kubernetes_io_part_of="store",label_team="shop",node_name="worker-1",owner_kind="StatefulSet",owner_name="db",pod_id="'$(uid 3)'",pod_name="db-0",pod_namespace="shop"} 1'
has_info() { m | grep -qxF "$info_line"; }
eventually 60 has_info && ok "the exporter: $info_line" || fail "no such kepler_pod_info: $(m | grep kepler_pod_info | head -3)"
q() {
	curl -s --data-urlencode "query=$1" "http://127.0.0.1:$pport/api/v1/query" |
		jq -r 'if .status == "success" then .data.result[] | (.metric | to_entries | map(.key + "=" + .value) | join(",")) + " " + .value[1] else "ERROR " + .error end'
}
by_owner='sum by (pod_namespace, owner_kind, owner_name) (kepler_pod_cpu_joules_total{zone="package"} * on (pod_id) group_left (owner_kind, owner_name) kepler_pod_info{pod_namespace=~"shop|data"})'
joined() { [ "$(q "$by_owner" | grep -c 'pod_namespace=')" -eq 5 ]; }
eventually 120 joined &&
	ok "Prometheus: $by_owner: 5 owners, the bare pod's without owner labels ($(q "$by_owner" | cut -d' ' -f1 | sed 's/owner_kind=//;s/,owner_name=/\//;s/,pod_namespace=/@/' | sort | tr '\n' ' '))" ||
	fail "the join by owner: $(q "$by_owner")"
by_team='sum by (label_team) (kepler_pod_cpu_joules_total{zone="package"} * on (pod_id) group_left (label_team) kepler_pod_info{pod_namespace=~"shop|data"})'
r=$(q "$by_team" | cut -d' ' -f1 | sort | tr '\n' ' ')
[ "$r" = " label_team=data label_team=shop " ] && ok "Prometheus: energy by team: data, shop and the unlabelled pod's ({})" ||
	fail "by team: '$r'"

# the chargeback levels: an exporter of node,namespace,owner serves no pod, container nor process
# series, and its namespace and owner counters are kepler-report's rows since the store began
cport=$(free_port)
start_exporter_for "$store" $cport --metrics.level node,namespace,owner
curl_c() { curl -s "http://127.0.0.1:$cport/metrics" >"$tmp/charge.prom" && grep -q '^kepler_owner_cpu_joules_total{' "$tmp/charge.prom"; }
eventually 60 curl_c || fail "no kepler_owner_cpu_joules_total from --metrics.level node,namespace,owner: $(head -c 300 "$tmp/charge.prom")"
n=$(grep -c '^kepler_\(pod\|container\|process\|vm\)_' "$tmp/charge.prom")
[ "$n" -eq 0 ] && ok "--metrics.level node,namespace,owner: no pod, container, VM or process series ($(grep -c '^kepler_' "$tmp/charge.prom") series in all)" ||
	fail "$n workload series with the chargeback levels alone"
seq=$(sed -n 's/^kepler_snapshot_seq{[^}]*} //p' "$tmp/charge.prom")
ts=$("$stdout" --store.path "$store" --seq "$seq" --format json | jq -r .timestamp)
uj() { # the family's series as "LABELS µJ" (the exposition's joules: trailing zeros trimmed)
	sed -n "s/^kepler_$1_cpu_joules_total{\(.*\)} \([0-9.]*\)$/\1 \2/p" "$tmp/charge.prom" |
		sed 's/node_name="[^"]*",//; s/"//g' |
		awk '{ n = split($2, v, "."); f = n > 1 ? v[2] : ""; while (length(f) < 6) f = f "0"; w = v[1] f; sub(/^0+/, "", w); print $1, (w == "" ? 0 : w) }' | sort
}
for by in namespace owner; do
	"$report" --store.path "$store" --since 2000-01-01T00:00:00Z --until "$ts" --by $by --format json >"$tmp/since-$by.json" 2>/dev/null
	if [ $by = owner ]; then
		want=$(jq -r '.rows[] | . as $r | .zones[] | "owner_kind=\($r.owner_kind),owner_name=\($r.owner_name),pod_namespace=\($r.pod_namespace),zone=\(.name) \(.energy_uj)"' "$tmp/since-$by.json" | sort)
	else
		want=$(jq -r '.rows[] | . as $r | .zones[] | "pod_namespace=\($r.pod_namespace),zone=\(.name) \(.energy_uj)"' "$tmp/since-$by.json" | sort)
	fi
	got=$(uj $by)
	[ -n "$want" ] && [ "$got" = "$want" ] &&
		ok "kepler_${by}_cpu_joules_total at snapshot $seq = kepler-report --by $by since the store began, to the µJ ($(wc -l <<<"$got") series)" ||
		fail "kepler_${by}_cpu_joules_total: $(diff <(echo "$want") <(echo "$got") | head -6)"
done
grep -q '^kepler_owner_co2e_grams_total{node_name="worker-1",owner_kind="Deployment",owner_name="web",pod_namespace="shop",zone="package"} ' "$tmp/charge.prom" &&
	ok "and kepler_owner_co2e_grams_total per owner (intensity 350 g/kWh)" || fail "no kepler_owner_co2e_grams_total for Deployment web"
finish kube_owners
