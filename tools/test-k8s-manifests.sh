#!/usr/bin/env bash
# tools/test-k8s-manifests.sh: render deploy/kubernetes with kustomize (the
# default, and each overlay) and validate every object against the
# Kubernetes schemas offline with the npm package kubernetes-models (and the
# Prometheus Operator's schemas for ServiceMonitor and PrometheusRule).
# Needs kubectl (1.21 or later: `kubectl kustomize`, no cluster) and npm
# (installs tools/k8s-validate/node_modules from the npm registry on first
# use). Also checks that the validator refuses a broken object.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v kubectl >/dev/null || { echo "test-k8s-manifests.sh: kubectl is needed (kubectl kustomize)" >&2; exit 1; }
command -v npm >/dev/null || { echo "test-k8s-manifests.sh: npm is needed (apt-get install npm)" >&2; exit 1; }
v=tools/k8s-validate
[ -d $v/node_modules/kubernetes-models ] || (cd $v && npm install --no-audit --no-fund --loglevel=error)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
for k in deploy/kubernetes deploy/kubernetes/overlays/kubelet deploy/kubernetes/overlays/logs deploy/kubernetes/overlays/gpu deploy/kubernetes/overlays/push; do
	kubectl kustomize "$k" >"$tmp/out.yaml"
	echo "== $k: $(grep -c '^kind:' "$tmp/out.yaml") objects"
	node $v/validate.mjs <"$tmp/out.yaml" || rc=1
done
# the validator must fail on a broken object
kubectl kustomize deploy/kubernetes | sed 's/containerPort: 28282/containerPort: twenty/' >"$tmp/bad.yaml"
if node $v/validate.mjs <"$tmp/bad.yaml" >"$tmp/bad.out"; then
	echo "FAIL: a DaemonSet with containerPort 'twenty' validated"
	rc=1
else
	echo "ok: a DaemonSet with containerPort 'twenty' is refused: $(grep FAIL "$tmp/bad.out" | head -c 200)"
fi
# what the kubelet overlay grants, and what the logs overlay does not
kubectl kustomize deploy/kubernetes/overlays/kubelet | grep -A6 '^rules:' | tr -d ' \n' | grep -q 'resources:-nodes/proxyverbs:-get$' &&
	echo "ok: the kubelet overlay grants nodes/proxy get, nothing else" || { echo "FAIL: RBAC"; rc=1; }
out=$(kubectl kustomize deploy/kubernetes/overlays/push)
grep -q -- '- kepler-push' <<<"$out" && grep -A1 'port: 53' <<<"$out" | grep -q UDP &&
	echo "ok: the push component adds kepler-push to the pod and lets it reach DNS and the receiver" ||
	{ echo "FAIL: push component: $(grep -n 'kepler-push\|port: 53' <<<"$out" | head -5)"; rc=1; }
if kubectl kustomize deploy/kubernetes/overlays/logs | grep -qE '^kind: (ClusterRole|Role)'; then
	echo "FAIL: the logs overlay has RBAC"
	rc=1
else
	echo "ok: the logs overlay has no RBAC and mounts no token"
fi
[ $rc -eq 0 ] && echo "test-k8s-manifests.sh: all manifests render and validate"
exit $rc
