#!/usr/bin/env bash
# tools/test-node.sh: a rehearsal of a Kubernetes node on this machine
# (issue 45; docs/kubernetes.md, "Rehearsed on one machine"). The project's
# image (Containerfile) runs under podman as the Helm chart specifies its
# pod: the arguments are read from what `helm template deploy/helm/kepler-c`
# renders with the default values (by tools/node_podman_args.py; the same
# pod as kustomize's deploy/kubernetes, which tools/test-k8s-manifests.sh
# checks field by field): hostPID, the same mounts
# at the same paths (the host's /sys and /proc at /host/sys and /host/proc,
# read-only), the same users, capabilities, seccomp, read-only root and
# limits; each container in its own cgroup and mount namespaces, under a
# burstable pod's cgroup; the exporter as nobody with the store read-only.
# A stand-in kubelet serves HTTPS on 127.0.0.1:10250 (HOST_IP) with the real
# PodList JSON for the workload containers, to the projected token. The
# workloads are podman containers under kubepods-shaped cgroup parents
# (cgroupfs driver): a guaranteed pod burning CPU, a burstable pod running
# 500 short processes, a besteffort pod asleep.
#
# Checks: pod, container and namespace names on /metrics; the short
# processes' container gets its cgroup's CPU time within 1 % (the
# kernel's own accounting) and its pod the energy; conservation is exact in
# every snapshot; three rollouts (the collector container replaced while
# the workloads run) leave every counter monotonic and the sleeping pod in
# every snapshot; the exporter container cannot write to the store.
#
# Differences from a real node (docs/kubernetes.md): podman and runc, not a
# CRI runtime; host networking, not a pod network; the fake meter (no RAPL
# here); a 1 s interval; the store's hostPath is a scratch folder.
#
# Exit 0 when every check passed, 1 when one failed, 77 (and a line saying
# why) where podman cannot run. The image is built once (podman's layer
# cache), the base image kept between runs.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
say() { echo "test-node.sh: $*"; }
skip() { say "SKIP: $*"; exit 77; }
fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
[ "$(id -u)" -eq 0 ] || skip "needs root (podman with the host's PIDs, cgroups, eBPF)"
. tools/image.sh
. tools/k8s-tools.sh
kepler_k8s_tools || skip "no helm to render the chart (above)"
kepler_install_podman || skip "cannot install podman, runc and debootstrap from Debian's archive"
python3 -c 'import yaml' 2>/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-yaml >/dev/null 2>&1 ||
	skip "python3-yaml missing (reads the manifests)"
for t in curl openssl jq; do command -v $t >/dev/null || skip "$t missing (tools/setup.sh installs it)"; done
t_start=$(date +%s)
kepler_base_image || skip "no base image: debootstrap or podman import failed"
pm run --rm "${kepler_limits[@]}" --network none $kepler_base_img true >/dev/null 2>&1 ||
	skip "podman cannot run a container here: $(pm run --rm "${kepler_limits[@]}" --network none $kepler_base_img true 2>&1 | tail -1)"
kepler_build_image /tmp/kepler-node-image.log || exit 1
t_image=$(date +%s)

tmp=$(mktemp -d)
chmod 0755 "$tmp"
tag=kn$$
pmc() { pm --cgroup-manager cgroupfs "$@"; }
hex() { head -c $(($1 / 2)) /dev/urandom | od -An -tx1 | tr -d ' \n'; }
uuid() { local h; h=$(hex 32); echo "${h:0:8}-${h:8:4}-${h:12:4}-${h:16:4}-${h:20:12}"; }
kpid=
cleanup() {
	pmc rm -f -t 0 $tag-collector $tag-exporter $tag-burner $tag-batch $tag-sleeper >/dev/null 2>&1
	[ -n "$kpid" ] && kill "$kpid" 2>/dev/null
	for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods /sys/fs/cgroup/unified/kubepods; do
		[ -d "$d" ] || continue
		for u in "$u_kepler" "$u_burner" "$u_batch" "$u_sleeper"; do
			find "$d" -depth -type d -path "*pod$u*" -exec rmdir {} \; 2>/dev/null
		done
		rmdir "$d/burstable" "$d/besteffort" "$d" 2>/dev/null
	done
	if [ -n "${KEPLER_TEST_KEEP:-}" ] && [ "$fails" -gt 0 ]; then echo "kept: $tmp"; else rm -rf "$tmp"; fi
}
u_kepler=$(uuid) u_burner=$(uuid) u_batch=$(uuid) u_sleeper=$(uuid)
trap cleanup EXIT

# ---- the chart's DaemonSet, as podman arguments ----
"$HELM" template kepler-c deploy/helm/kepler-c --namespace kepler-c >"$tmp/rendered.yaml" 2>"$tmp/helm.err" ||
	{ fail "helm template: $(cat "$tmp/helm.err")"; exit 1; }
ok "the DaemonSet of helm template deploy/helm/kepler-c (default values, $("$HELM" version --short))"
python3 tools/node_podman_args.py "$tmp/rendered.yaml" "$tmp/host" "$tmp/configmap" "$tmp/token" rehearsal-node 127.0.0.1 \
	"$tmp/args" >"$tmp/args.txt" || { fail "cannot read the manifests"; exit 1; }
read_args() { # read_args CONTAINER: opts=(...) cmd=(...)
	local all=() i
	mapfile -d '' all <"$tmp/args/$1.args"
	opts=() cmd=()
	for ((i = 0; i < ${#all[@]}; i++)); do [ "${all[i]}" = -- ] && break; opts+=("${all[i]}"); done
	cmd=("${all[@]:i+1}")
}

# ---- the stand-in kubelet: HTTPS on HOST_IP:10250, the projected token and CA ----
mkdir -p "$tmp/token"
(cd "$tmp" &&
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out token/ca.crt -days 2 -subj /CN=rehearsal-ca &&
	openssl req -newkey rsa:2048 -nodes -keyout kubelet.key -out kubelet.csr -subj /CN=rehearsal-node &&
	printf 'subjectAltName=IP:127.0.0.1\n' >san.ext &&
	openssl x509 -req -in kubelet.csr -CA token/ca.crt -CAkey ca.key -CAcreateserial -out kubelet.crt -days 2 \
		-extfile san.ext) >/dev/null 2>&1 || { fail "openssl could not make the kubelet's certificate"; exit 1; }
echo "rehearsal-token-$RANDOM$RANDOM" >"$tmp/token/token"
chmod 0644 "$tmp/token/ca.crt"
# as the chart's projected volume mounts it: defaultMode 0440, the pod's fsGroup (2001) as its group
chgrp 2001 "$tmp/token/token" && chmod 0440 "$tmp/token/token"
echo ok >"$tmp/mode"
echo '{"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []}' >"$tmp/pods.json"
python3 -c "import socket; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((\"127.0.0.1\", 10250))" 2>/dev/null ||
	skip "port 10250 (the kubelet's) is taken on this machine"
python3 tests/fakes/fake_kubelet.py 10250 "$tmp/kubelet.crt" "$tmp/kubelet.key" "$tmp/pods.json" "$tmp/token/token" \
	"$tmp/mode" >"$tmp/kubelet.log" 2>&1 &
kpid=$!

# ---- the DaemonSet's pod: collector and exporter ----
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pod_parent=/kubepods/burstable/pod$u_kepler # requests below limits: Burstable
start_collector() {
	read_args collector
	pmc run -d --name $tag-collector "${kepler_limits[@]}" --network host --cgroupns private \
		--cgroup-parent $pod_parent "${opts[@]}" $kepler_img "${cmd[@]}" \
		--meter.source fake --monitor.interval 1s >/dev/null 2>"$tmp/run.err" ||
		{ fail "the collector container did not start: $(cat "$tmp/run.err")"; return 1; }
}
start_collector || exit 1
read_args exporter
pmc run -d --name $tag-exporter "${kepler_limits[@]}" --network host --cgroupns private \
	--cgroup-parent $pod_parent "${opts[@]}" $kepler_img "${cmd[@]}" --web.listen-address 127.0.0.1:$port \
	>/dev/null 2>"$tmp/run.err" || { fail "the exporter container did not start: $(cat "$tmp/run.err")"; exit 1; }
sleep 4
clog=$(pmc logs $tag-collector 2>&1)
line=$(grep -o 'informer ebpf.*' <<<"$clog" | head -1)
[ -n "$line" ] && ok "collector: ${line:0:60}...${line: -100}" ||
	fail "the collector did not load eBPF: $(grep -E 'informer|error' <<<"$clog" | head -3)"
cpid=$(pmc inspect $tag-collector --format '{{.State.Pid}}')
[ "$(readlink /proc/$cpid/ns/cgroup)" != "$(readlink /proc/self/ns/cgroup)" ] &&
	[ "$(readlink /proc/$cpid/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] &&
	ok "the collector has its own cgroup and mount namespaces, the host's PIDs, cgroup $(grep -m1 cpuacct /proc/$cpid/cgroup | cut -d: -f3)" ||
	fail "the collector's namespaces"

# ---- the workloads: three QoS classes, kubepods-shaped cgroup parents (cgroupfs driver) ----
workload() { # workload NAME PARENT CPUS SCRIPT
	pmc run -d --name $tag-$1 "${kepler_limits[@]}" --network none --cgroup-parent "$2" --cpus "$3" \
		$kepler_base_img sh -c "$4" >/dev/null 2>"$tmp/run.err" || fail "workload $1 did not start: $(cat "$tmp/run.err")"
}
workload burner /kubepods/pod$u_burner 0.2 'while :; do :; done'
workload batch /kubepods/burstable/pod$u_batch 1 \
	'for i in $(seq 500); do sh -c "i=0; while [ \$i -lt 2000 ]; do i=\$((i + 1)); done"; done; echo done; sleep 3600'
workload sleeper /kubepods/besteffort/pod$u_sleeper 1 'i=0; while [ $i -lt 100000 ]; do i=$((i + 1)); done; exec sleep 3600'
id_of() { pmc inspect $tag-$1 --format '{{.Id}}'; }
c_burner=$(id_of burner) c_batch=$(id_of batch) c_sleeper=$(id_of sleeper)
status() { # status NAME ID
	printf '{"name": "%s", "state": {"running": {"startedAt": "2026-11-27T08:00:00Z"}}, "ready": true, "restartCount": 0, "image": "x", "imageID": "", "containerID": "containerd://%s", "started": true}' "$1" "$2"
}
pod() { # pod NAME NAMESPACE UID QOS CONTAINER ID
	printf '{"metadata": {"name": "%s", "namespace": "%s", "uid": "%s"}, "spec": {"containers": [{"name": "%s"}]}, "status": {"phase": "Running", "qosClass": "%s", "containerStatuses": [%s]}}' \
		"$1" "$2" "$3" "$5" "$4" "$(status "$5" "$6")"
}
cat >"$tmp/pods.json.new" <<JSON
{"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [
 $(pod api-0 shop "$u_burner" Guaranteed burner "$c_burner"),
 $(pod report-1 jobs "$u_batch" Burstable batch "$c_batch"),
 $(pod cache-0 shop "$u_sleeper" BestEffort sleeper "$c_sleeper")
]}
JSON
jq -e '.items | length == 3' "$tmp/pods.json.new" >/dev/null || fail "the rehearsal's PodList is not JSON"
mv "$tmp/pods.json.new" "$tmp/pods.json"
for _ in $(seq 60); do pmc logs $tag-batch 2>/dev/null | grep -q done && break; sleep 0.5; done
pmc logs $tag-batch 2>/dev/null | grep -q done || fail "the batch's 500 processes did not finish in 30 s"
sleep 3

# ---- three rollouts while the workloads run ----
for n in 1 2 3; do
	pmc stop -t 30 $tag-collector >/dev/null && pmc rm $tag-collector >/dev/null || fail "rollout $n: stop"
	start_collector || break
	sleep 4
done
grep -o 'resuming the totals.*' <(pmc logs $tag-collector 2>&1) | sed 's/^/  last start: /'
sleep 14 # a kube poll (15 s) after the last start: names for every container

# ---- /metrics: names ----
m=$(curl -s "http://127.0.0.1:$port/metrics")
for want in "kepler_container_cpu_joules_total{[^}]*container_id=\"$c_batch\"[^}]*container_name=\"batch\"[^}]*pod_id=\"$u_batch\"" \
	"kepler_pod_cpu_joules_total{[^}]*pod_id=\"$u_batch\",pod_name=\"report-1\",pod_namespace=\"jobs\"" \
	"kepler_pod_cpu_joules_total{[^}]*pod_id=\"$u_burner\",pod_name=\"api-0\",pod_namespace=\"shop\"" \
	"kepler_pod_cpu_joules_total{[^}]*pod_id=\"$u_sleeper\",pod_name=\"cache-0\",pod_namespace=\"shop\""; do
	grep -Eq "$want" <<<"$m" && ok "/metrics: $(grep -Eo "$want" <<<"$m" | head -1 | sed 's/container_id="[0-9a-f]*"/container_id="…"/; s/pod_id="[^"]*"/pod_id="…"/')…" ||
		fail "/metrics has no ${want:0:60}…"
done

# ---- the store, read as the exporter reads it ----
stop_at=$(date +%s)
pmc run --rm "${kepler_limits[@]}" --network none --user 65534:2001 -v "$tmp/host/var/lib/kepler-c:/var/lib/kepler-c:ro" \
	$kepler_img kepler-stdout --store.path /var/lib/kepler-c/store --all --format json >"$tmp/all.json" 2>"$tmp/stdout.err" ||
	fail "kepler-stdout in the image: $(cat "$tmp/stdout.err")"
batch_pid=$(pmc inspect $tag-batch --format '{{.State.Pid}}')
cg=$(awk -F: '$2 ~ /(^|,)cpuacct(,|$)/ {print $3}' /proc/$batch_pid/cgroup)
if [ -n "$cg" ]; then
	acct=$(for d in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/cpu,cpuacct; do [ -f "$d$cg/cpuacct.usage" ] && cat "$d$cg/cpuacct.usage" && break; done)
else
	cg=$(awk -F: '$1 == 0 {print $3}' /proc/$batch_pid/cgroup)
	acct=$(awk '$1 == "usage_usec" {print $2 "000"} # (mawk: no float for large values)' "/sys/fs/cgroup$cg/cpu.stat")
fi
python3 - "$tmp/all.json" "$c_batch" "$u_batch" "${acct:-0}" "$c_sleeper" "$u_sleeper" <<'PY' || fails=$((fails + 1))
import json, sys
snaps = [json.loads(l) for l in open(sys.argv[1])]
c_batch, u_batch, acct, c_sleep, u_sleep = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
bad = 0
def say(good, text):
    global bad
    print(("ok: " if good else "FAIL: ") + text)
    bad += not good
last = snaps[-1]
c = next((c for c in last['containers'] if c['container_id'] == c_batch), None)
p = next((p for p in last['pods'] if p['pod_id'] == u_batch), None)
got = c['cpu_time_ns'] if c else 0
say(acct > 0 and 0.99 * acct <= got <= 1.01 * acct,
    f"the batch container (500 short processes, each its runtime's piece cut at the move and the exec): {got / 1e6:.1f} ms of the {acct / 1e6:.1f} ms its cgroup used "
    f"({100 * got / acct if acct else 0:.2f} %)")
pe = sum(z['energy_uj'] for z in p['zones']) if p else 0
say(p is not None and pe > 0 and p['cpu_time_ns'] >= got, f"its pod report-1: {pe / 1e6:.3f} J, {p['cpu_time_ns'] / 1e6 if p else 0:.1f} ms")
# conservation, every snapshot: processes' shares plus unattributed are the node's active energy, exactly
breaches, checks = 0, 0
for s in snaps:
    for z, zn in enumerate(s['node']['zones']):
        procs = sum(pr['zones'][z]['delta_uj'] for pr in s['processes'])
        checks += 1
        if procs + zn.get('unattributed_delta_uj', 0) != zn['active_delta_uj']:
            breaches += 1
            if breaches <= 3:
                print(f"  seq {s['seq']} {zn['name']}: processes {procs} + unattributed {zn.get('unattributed_delta_uj', 0)} != active {zn['active_delta_uj']}")
        for kind, key in (('containers', 'container_id'), ('pods', 'pod_id')):
            pass
say(breaches == 0, f"conservation: {checks} zone-snapshots, {breaches} breaches")
# monotonic across the three rollouts, and the sleeping pod in every snapshot
high, down, runs, missing, first = {}, 0, 0, 0, None
for i, s in enumerate(snaps):
    runs += s['first']
    ids = [(('zone', z['name']), z['energy_uj']) for z in s['node']['zones']]
    for pr in s['processes']:
        ids += [(('process', pr['pid'], pr['start_time_ns'], z['name']), z['energy_uj']) for z in pr['zones']]
        ids.append((('process-cpu', pr['pid'], pr['start_time_ns'], pr['comm']), pr['cpu_time_ns']))
    for kind, key in (('containers', 'container_id'), ('pods', 'pod_id')):
        for w in s[kind]:
            ids += [((kind, w[key], z['name']), z['energy_uj']) for z in w['zones']]
            ids.append(((kind + '-cpu', w[key]), w['cpu_time_ns']))
    for k, v in ids:
        if v < high.get(k, 0):
            down += 1
            if down <= 3:
                print(f"  seq {s['seq']} (run {runs}): {k} went from {high[k]} to {v}")
        high[k] = max(high.get(k, 0), v)
    here = any(w['pod_id'] == u_sleep for w in s['pods'])
    if here and first is None:
        first = i
    if first is not None and not here:
        missing += 1
say(runs == 4 and down == 0, f"{len(snaps)} snapshots over {runs} runs of the collector (3 rollouts): {len(high)} counters, {down} went down")
say(first is not None and missing == 0, f"the sleeping pod cache-0: in every snapshot from its first ({missing} missing)")
sys.exit(bad > 0)
PY

# ---- the exporter container cannot write to the store ----
if pmc exec $tag-exporter sh -c 'echo x >>/var/lib/kepler-c/store/data.mdb' 2>/dev/null ||
	pmc exec $tag-exporter sh -c 'touch /var/lib/kepler-c/store/planted' 2>/dev/null; then
	fail "the exporter container could write to the store"
else
	ok "the exporter container cannot write to the store ($(pmc exec $tag-exporter id -u):$(pmc exec $tag-exporter id -g), $(pmc exec $tag-exporter sh -c 'touch /var/lib/kepler-c/store/planted' 2>&1 | tail -1))"
fi
t_end=$(date +%s)
say "base and image $((t_image - t_start)) s, rehearsal $((t_end - t_image)) s"
[ $fails -eq 0 ] && say "all checks passed"
exit $((fails > 0))
