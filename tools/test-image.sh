#!/usr/bin/env bash
# tools/test-image.sh: build the image (Containerfile) with podman from a
# Debian 12 base made from Debian's archive alone (debootstrap
# --variant=minbase bookworm, then podman import; no registry), and run the
# DaemonSet's two containers as deploy/kubernetes does: --pid=host, the
# collector as root:kepler with exactly BPF, PERFMON, SYS_PTRACE, CHOWN,
# SETUID, SETGID and SETPCAP and seccomp unconfined (it becomes user kepler
# with nothing after start), the exporter as 65534:kepler with
# no capability, both read-only with no-new-privileges, sharing a fresh
# named volume for the store; fake meter. Checks: the collector uses eBPF,
# the exporter holds no capability and serves /metrics from the collector's
# store, /healthz goes 503 once the collector container is stopped.
# Slow (the first build downloads the toolchain into the image: minutes), so
# not in .ci/run. Facts of this host: runc (crun refuses hybrid cgroups),
# explicit ulimits.
set -uo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "test-image.sh: needs root (debootstrap, podman)" >&2; exit 2; }
. tools/image.sh
kepler_install_podman || { echo "test-image.sh: cannot install podman, runc, debootstrap" >&2; exit 2; }
limits=("${kepler_limits[@]}")
base_img=$kepler_base_img img=$kepler_img
fails=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tag=kc$$
cleanup() {
	pm rm -f -t 2 $tag-collector $tag-exporter >/dev/null 2>&1
	pm volume rm -f $tag-store >/dev/null 2>&1
}
trap cleanup EXIT

kepler_base_image || exit 1
kepler_build_image /tmp/kepler-image-build.log || exit 1
for b in kepler-collectd kepler-exporter kepler-stdout kepler-top kepler-dataset kepler-train kepler-passthrough kepler-report kepler-push; do
	pm run --rm "${limits[@]}" $img $b --version >/dev/null 2>&1 || fail "$b does not run in the image"
done
ok "every binary runs in the image"
gid=$(pm run --rm "${limits[@]}" $img getent group kepler | cut -d: -f3)
[ "$gid" = 2001 ] && ok "group kepler has GID 2001" || fail "group kepler: '$gid'"
mode=$(pm run --rm "${limits[@]}" $img stat -c '%a %U:%G' /var/lib/kepler-c/store)
[ "$mode" = "2775 root:kepler" ] && ok "the image's store directory: $mode (a fresh volume inherits it)" ||
	fail "image store dir: $mode"

pm volume create $tag-store >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pm run -d --name $tag-collector "${limits[@]}" --pid=host --network none --user 0:2001 \
	--cap-drop ALL --cap-add BPF,PERFMON,SYS_PTRACE,CHOWN,SETUID,SETGID,SETPCAP \
	--security-opt seccomp=unconfined --security-opt no-new-privileges --read-only \
	-v $tag-store:/var/lib/kepler-c -v /sys:/host/sys:ro -v /proc:/host/proc:ro \
	$img kepler-collectd --meter.source fake --monitor.interval 1s --store.path /var/lib/kepler-c/store \
	--store.group kepler --host.procfs /host/proc --host.sysfs /host/sys >/dev/null ||
	fail "the collector container did not start"
pm run -d --name $tag-exporter "${limits[@]}" --pid=host --network host --user 65534:2001 --cap-drop ALL \
	--security-opt no-new-privileges --read-only -v $tag-store:/var/lib/kepler-c:ro \
	$img kepler-exporter --store.path /var/lib/kepler-c/store --web.listen-address 127.0.0.1:$port >/dev/null ||
	fail "the exporter container did not start"
sleep 6
clog=$(pm logs $tag-collector 2>&1)
grep -q "informer ebpf" <<<"$clog" && ok "the collector loads its eBPF program (caps BPF, PERFMON; seccomp unconfined)" ||
	fail "collector informer: $(grep -E 'informer|error' <<<"$clog" | head -3)"
m=$(curl -s "http://127.0.0.1:$port/metrics")
grep -q '^kepler_node_cpu_joules_total{' <<<"$m" && grep -q '^kepler_process_cpu_watts{' <<<"$m" &&
	ok "the exporter container serves /metrics from the collector container's store" ||
	fail "metrics: $(head -c 300 <<<"$m"); $(pm logs $tag-exporter 2>&1 | tail -3)"
epid=$(pm inspect $tag-exporter --format '{{.State.Pid}}')
caps=$(awk '/^Cap(Eff|Prm|Bnd)/ {printf "%s=%s ", $1, $2}' /proc/$epid/status)
nnp=$(awk '/^NoNewPrivs/ {print $2}' /proc/$epid/status)
uid=$(awk '/^Uid/ {print $2}' /proc/$epid/status)
[ "$caps" = "CapPrm:=0000000000000000 CapEff:=0000000000000000 CapBnd:=0000000000000000 " ] && [ "$nnp" = 1 ] && [ "$uid" = 65534 ] &&
	ok "the exporter holds nothing: uid 65534, $caps NoNewPrivs $nnp" || fail "exporter credentials: uid $uid, $caps NoNewPrivs $nnp"
cpid=$(pm inspect $tag-collector --format '{{.State.Pid}}')
held=$(awk '/^(Uid|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):/ {printf "%s %s ", $1, $2}' /proc/$cpid/status)
[ "$held" = "Uid: 2001 CapPrm: 0000000000000000 CapEff: 0000000000000000 CapBnd: 0000000000000000 CapAmb: 0000000000000000 NoNewPrivs: 1 Seccomp: 2 " ] &&
	ok "the collector after start holds nothing: $held" || fail "collector credentials after start: $held"
mode=$(pm run --rm "${limits[@]}" -v $tag-store:/v:ro $img stat -c '%a %U:%G' /v/store /v/store/data.mdb | tr '\n' ' ')
[ "$mode" = "750 root:kepler 640 kepler:kepler " ] &&
	ok "the fresh volume, once the collector made the store: $mode(group kepler reads, nobody else)" ||
	fail "store modes on the volume: $mode"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")" = 200 ] && ok "/healthz 200 while the collector runs" ||
	fail "/healthz not 200"
pm stop -t 5 $tag-collector >/dev/null
sleep 5
code=$(curl -s -o "/tmp/$tag.h" -w '%{http_code}' "http://127.0.0.1:$port/healthz")
[ "$code" = 503 ] && ok "/healthz 503 once the collector container is stopped: $(cat "/tmp/$tag.h")" || fail "/healthz after stop: $code"
rm -f "/tmp/$tag.h"
[ $fails -eq 0 ] && echo "test-image.sh: all checks passed"
exit $((fails > 0))
