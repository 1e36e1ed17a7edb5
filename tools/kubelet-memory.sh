#!/usr/bin/env bash
# tools/kubelet-memory.sh: the collector's peak memory when the kubelet
# answers 32 MiB (the most its client takes) of the JSON shapes that cost
# json-c the most, and a real PodList of 2,000 pods (issue 47). For each
# answer: the real collector (fake meter, procfs informer, 1 s intervals)
# polls tests/fakes/fake_kubelet.py over HTTPS every 2 s for 8 s; its VmHWM is
# read from /proc before it is stopped. The DaemonSet's limit is 256 MiB.
# Usage: tools/kubelet-memory.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
tmp=$(mktemp -d)
chmod 0755 "$tmp" # the collector reads the token after it drops privileges
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
(cd "$tmp" &&
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=test-kube-ca &&
	openssl req -newkey rsa:2048 -nodes -keyout kubelet.key -out kubelet.csr -subj /CN=worker-1 &&
	printf 'subjectAltName=IP:127.0.0.1\n' >san.ext &&
	openssl x509 -req -in kubelet.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out kubelet.crt -days 2 \
		-extfile san.ext) >/dev/null 2>&1 || { echo "openssl failed" >&2; exit 1; }
echo "token-$RANDOM" >"$tmp/token"
chgrp "$(id -gn kepler 2>/dev/null || echo root)" "$tmp/token" && chmod 0640 "$tmp/token" # secret-file rules
echo ok >"$tmp/mode"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 tests/fakes/fake_kubelet.py "$port" "$tmp/kubelet.crt" "$tmp/kubelet.key" "$tmp/pods.json" "$tmp/token" \
	"$tmp/mode" >"$tmp/kubelet.log" 2>&1 &
pids+=($!)
sleep 1
# answer NAME: write pods.json of that shape
answer() {
	python3 - "$1" "$tmp/pods.json" <<'PY'
import json, sys
shape, out = sys.argv[1], sys.argv[2]
size = 32 << 20
units = {"objects": "{},", "arrays": "[],", "numbers": "1,", "members": '"a":{"b":["c"]},'}
with open(out, "w") as f:
    if shape == "podlist":
        items = []
        for i in range(2000):
            uid = "%08x-0000-4000-8000-%012x" % (i, i)
            items.append({"metadata": {"name": "pod-%d" % i, "namespace": "ns-%d" % (i % 20), "uid": uid,
                                       "labels": {"app": "a%d" % i, "tier": "web"}},
                          "spec": {"containers": [{"name": "c%d" % k, "image": "registry/app:1",
                                                   "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}
                                                  for k in range(3)]},
                          "status": {"phase": "Running", "qosClass": "Burstable",
                                     "containerStatuses": [{"name": "c%d" % k, "ready": True, "restartCount": 0,
                                                            "image": "registry/app:1", "imageID": "sha256:%064x" % k,
                                                            "containerID": "containerd://%062x%02x" % (i, k),
                                                            "state": {"running": {"startedAt": "2026-11-27T00:00:00Z"}}}
                                                           for k in range(3)]}})
        json.dump({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}, f)
    else:
        u = units[shape]
        head = '{"items": [{' if shape == "members" else '{"items": ['
        tail = '"z": 0}]}' if shape == "members" else '1]}'
        f.write(head + u * ((size - len(head) - len(tail)) // len(u)) + tail)
PY
}
printf '%-10s %10s %12s  %s\n' answer bytes "peak RSS" "what the collector said"
for shape in ${SHAPES:-podlist objects arrays numbers members}; do
	answer "$shape"
	bytes=$(stat -c %s "$tmp/pods.json")
	"$build/collectd/kepler-collectd" --store.path "$tmp/store-$shape" --store.group "" --meter.source fake \
		--informer procfs --monitor.interval 1s --kube.enabled --kube.pod-source kubelet \
		--kube.kubelet-url "https://127.0.0.1:$port" --kube.token-file "$tmp/token" --kube.ca-file "$tmp/ca.crt" \
		--kube.node-name worker-1 --kube.poll-interval 2s >"$tmp/$shape.log" 2>&1 &
	cpid=$!
	sleep 8
	hwm=$(awk '/VmHWM/ {print $2}' "/proc/$cpid/status" 2>/dev/null)
	kill "$cpid"
	wait "$cpid" 2>/dev/null
	said=$(grep -o 'kube: [^(]*' "$tmp/$shape.log" | tail -1 | cut -c1-110)
	printf '%-10s %10s %9s MiB  %s\n' "$shape" "$bytes" "$(((${hwm:-0} + 1023) / 1024))" "$said"
done
