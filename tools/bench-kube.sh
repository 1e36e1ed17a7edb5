#!/usr/bin/env bash
# tools/bench-kube.sh [BUILD_DIR]: what Kubernetes names cost the collector,
# for docs/performance.md. A kubelet-like PodList of 110 pods and 400
# containers (bench_kube generate) is parsed 50 times, then served by
# tests/fakes/fake_kubelet.py over HTTPS (a test CA made with openssl) and polled
# 10 times by the collector's kube thread: CPU per poll and peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bench=$build/tests/bench_kube
[ -x "$bench" ] || { echo "bench-kube.sh: build $bench first (cmake --build $build)" >&2; exit 1; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
"$bench" generate 110 400 >"$tmp/pods.json"
echo "PodList: $(stat -c %s "$tmp/pods.json") bytes, $(jq '.items | length' "$tmp/pods.json") pods, $(jq '[.items[].status.containerStatuses[]] | length' "$tmp/pods.json") containers"
"$bench" parse "$tmp/pods.json" 50
(cd "$tmp" &&
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj /CN=bench-ca &&
	openssl req -newkey rsa:2048 -nodes -keyout k.key -out k.csr -subj /CN=kubelet &&
	printf 'subjectAltName=IP:127.0.0.1\n' >san.ext &&
	openssl x509 -req -in k.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out k.crt -days 1 -extfile san.ext) \
	>/dev/null 2>&1
echo "bench-token" >"$tmp/token"
echo ok >"$tmp/mode"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
python3 tests/fakes/fake_kubelet.py "$port" "$tmp/k.crt" "$tmp/k.key" "$tmp/pods.json" "$tmp/token" "$tmp/mode" \
	>"$tmp/kubelet.log" 2>&1 &
pid=$!
for _ in $(seq 50); do curl -s --cacert "$tmp/ca.crt" -o /dev/null "https://127.0.0.1:$port/" && break; sleep 0.1; done
"$bench" poll "https://127.0.0.1:$port" "$tmp/token" "$tmp/ca.crt" 10 2>/dev/null
