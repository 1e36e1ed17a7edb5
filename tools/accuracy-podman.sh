#!/usr/bin/env bash
# tools/accuracy-podman.sh: each podman container's CPU time as the
# collector attributes it, against its own cgroup's cpuacct.usage (the
# kernel's accounting), within 1 % (issue 62). The real collector (eBPF
# informer, fake meter, 5 s intervals) is started first, then N containers
# (default 12; runc, the host's cgroupfs layout /libpod_parent/libpod-ID)
# each run one of four workloads and then sleep: short processes (a few
# hundred /bin/true), a burner (a shell loop, 1-2 s of CPU), an exec chain
# (three programs, each exec a change of identity) and a mix of the three
# with pauses. Every container's first process starts as `runc init` in
# the runtime's cgroup and is moved in (a piece of its account at the
# move, bpf/cputime.bpf.c), as a pod's does under a kubelet. Once every
# container said it is done and two more snapshots were committed, each
# container's cumulative cpu_time_ns in the newest snapshot is compared
# with its cgroup's cpuacct.usage (the sleep that follows uses none).
# Prints one line per container and "N of N within 1 %"; exit 1 if any is
# beyond. Leaves nothing: the containers are removed, the collector stopped.
# Usage: tools/accuracy-podman.sh [BUILD_DIR] [N]   (about a minute)
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
n=${2:-12}
case $n in '' | *[!0-9]*) echo "usage: $0 [BUILD_DIR] [N]" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "accuracy-podman.sh: needs root (podman, eBPF)" >&2; exit 2; }
collectd=$build/collectd/kepler-collectd
stdout=$build/readers/stdout/kepler-stdout
[ -x "$collectd" ] && [ -x "$stdout" ] || { echo "accuracy-podman.sh: build $build first" >&2; exit 2; }
. tools/image.sh
kepler_install_podman || { echo "accuracy-podman.sh: cannot install podman, runc, debootstrap" >&2; exit 1; }
kepler_base_image || exit 1
tmp=$(mktemp -d)
chmod 755 "$tmp" # the collector runs as collector.user after start
tag=kepler-acc-$$
collector=
cleanup() {
	pm rm -f -t 0 $(pm ps -a --filter "name=^$tag-" --format '{{.Names}}') >/dev/null 2>&1
	[ -n "$collector" ] && kill "$collector" 2>/dev/null && wait "$collector" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
seq_now() { "$stdout" --store.path "$tmp/store" --format json 2>/dev/null | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["seq"])' 2>/dev/null || echo 0; }
wait_seq() { # wait_seq N: until snapshot N is committed (snapshots counted, not seconds)
	local _
	for _ in $(seq 600); do [ "$(seq_now)" -ge "$1" ] && return 0; sleep 0.5; done
	return 1
}

"$collectd" --informer ebpf --store.path "$tmp/store" --meter.source fake --monitor.interval 5s \
	--log.level warn >"$tmp/collectd.log" 2>&1 &
collector=$!
wait_seq 1 || { echo "FAIL: no snapshot from the collector: $(tail -3 "$tmp/collectd.log")"; exit 1; }
cat >"$tmp/work.sh" <<'SH'
# work.sh KIND: one container's workload (run by dash in the container)
burn() { i=0; while [ $i -lt $1 ]; do i=$((i + 1)); done; }
shorts() { j=0; while [ $j -lt 400 ]; do /bin/true; j=$((j + 1)); done; }
case $1 in
0) shorts ;;
1) burn 1500000 ;;
2) burn 600000; exec sh /work.sh chain2 ;;
chain2) burn 600000; exec sh /work.sh chain3 ;;
chain3) burn 600000 ;;
3) shorts; sleep 1; sh /work.sh 1; sleep 1; shorts ;;
esac
SH
chmod 644 "$tmp/work.sh"
kinds=4
for i in $(seq "$n"); do
	pm run -d --name "$tag-$i" --network none "${kepler_limits[@]}" -v "$tmp/work.sh:/work.sh:ro" $kepler_base_img \
		sh -c "sh /work.sh $((i % kinds)); echo done; exec sleep 1000000" >/dev/null ||
		{ echo "FAIL: podman run $tag-$i"; exit 1; }
done
for i in $(seq "$n"); do
	for _ in $(seq 1200); do pm logs "$tag-$i" 2>/dev/null | grep -q done && break; sleep 0.5; done
	pm logs "$tag-$i" 2>/dev/null | grep -q done || { echo "FAIL: container $i did not finish its work"; exit 1; }
done
s=$(seq_now)
wait_seq $((s + 2)) || { echo "FAIL: no snapshots after the work"; exit 1; }
"$stdout" --store.path "$tmp/store" --format json >"$tmp/last.json" || exit 1
for i in $(seq "$n"); do
	id=$(pm inspect "$tag-$i" --format '{{.Id}}')
	pid=$(pm inspect "$tag-$i" --format '{{.State.Pid}}')
	cg=$(awk -F: '$2 ~ /(^|,)cpuacct(,|$)/ {print $3}' "/proc/$pid/cgroup")
	acct=
	for d in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/cpu,cpuacct; do
		[ -n "$cg" ] && [ -f "$d$cg/cpuacct.usage" ] && acct=$(cat "$d$cg/cpuacct.usage") && break
	done
	if [ -z "$acct" ]; then # cgroup v2 alone
		cg=$(awk -F: '$1 == "0" {print $3}' "/proc/$pid/cgroup")
		acct=$(awk '$1 == "usage_usec" {print $2 "000"}' "/sys/fs/cgroup$cg/cpu.stat")
	fi
	echo "$i $id ${acct:-0} $((i % kinds))"
done >"$tmp/truth"
python3 - "$tmp/last.json" "$tmp/truth" <<'PY'
import json, sys
snap = json.loads(open(sys.argv[1]).readline())
kinds = ['short processes', 'burner', 'exec chain', 'mixed']
by_id = {c['container_id']: c for c in snap['containers']}
good = 0
rows = [l.split() for l in open(sys.argv[2])]
for i, cid, acct, kind in rows:
    acct = int(acct)
    c = by_id.get(cid)
    got = c['cpu_time_ns'] if c else 0
    pct = 100 * got / acct if acct else 0
    ok = acct > 0 and abs(got - acct) <= 0.01 * acct
    good += ok
    print(f"{'ok' if ok else 'FAIL'}: container {i:>3} ({kinds[int(kind)]:<15}): {got / 1e6:9.1f} ms of the {acct / 1e6:9.1f} ms its cpuacct.usage says ({pct:.2f} %)")
print(f"{good} of {len(rows)} containers within 1 % of their cpuacct.usage (snapshot {snap['seq']}, eBPF informer)")
sys.exit(0 if good == len(rows) else 1)
PY
