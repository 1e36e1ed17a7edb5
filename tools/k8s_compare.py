#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compare what the Helm chart renders with what kustomize renders.

The chart (deploy/helm/kepler-c) and the kustomize tree (deploy/kubernetes)
must not drift: tools/test-k8s-manifests.sh renders both for the same
variant and this script compares the objects that matter, field by field:

  DaemonSet      the pod's spec whole (containers: image, command, args, env,
                 ports, securityContext, probes, resources, volume mounts;
                 volumes, hostPID, tolerations, priority, service account,
                 runtime class, node selector), its template's labels and the
                 update strategy
  ConfigMap      config.yaml and push.yaml compared as parsed YAML, the
                 dashboard's JSON parsed, and the dashboard's sidecar label
  Service, NetworkPolicy, ServiceMonitor, PodMonitor, PrometheusRule  spec
  ClusterRole    rules; ClusterRoleBinding roleRef and subjects
  ServiceAccount automountServiceAccountToken

Labels that only Helm adds (app.kubernetes.io/instance, managed-by, version,
helm.sh/chart) are left out of selectors and labels; annotations are not
compared (the chart adds config checksums that roll the pods). Empty maps
and lists count as absent; lists of named items (containers, volumes,
mounts, env, ports) are compared by name, whatever their order.

Usage: k8s_compare.py KUSTOMIZE.yaml HELM.yaml [--only KIND|KIND/NAME,...] [--allow-missing KIND/NAME,...]
Exit 0 when every compared object is equal, 1 otherwise (each difference
printed with its path).
"""
import json
import sys

import yaml

HELM_ONLY_LABELS = {"app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version",
                    "helm.sh/chart"}


def load(path):
    with open(path) as f:
        return {(o["kind"], o["metadata"]["name"]): o for o in yaml.safe_load_all(f) if o}


def prune(x):
    """Drop empty maps and lists, and Helm's own labels from label maps."""
    if isinstance(x, dict):
        out = {}
        for k, v in x.items():
            if k in HELM_ONLY_LABELS:
                continue
            v = prune(v)
            if v in ({}, [], None):
                continue
            out[k] = v
        return out
    if isinstance(x, list):
        names = [v.get("name") for v in x if isinstance(v, dict)]
        if len(names) == len(x) and None not in names and len(set(names)) == len(names):
            # containers, volumes, mounts, env, ports: merged by name, their order does not matter
            return {f"<{n}>": prune({k: w for k, w in v.items() if k != "name"}) for n, v in zip(names, x)}
        return [prune(v) for v in x]
    return x


def config_map_data(o):
    out = {}
    for k, v in (o.get("data") or {}).items():
        if k.endswith(".yaml") or k.endswith(".yml"):
            out[k] = yaml.safe_load(v)
        elif k.endswith(".json"):
            out[k] = json.loads(v)
        else:
            out[k] = v
    labels = {k: v for k, v in (o["metadata"].get("labels") or {}).items() if k.startswith("grafana")}
    return {"data": out, "sidecar-labels": labels}


def fields(o):
    kind = o["kind"]
    if kind == "DaemonSet":
        t = o["spec"]["template"]
        return {"selector": o["spec"]["selector"], "updateStrategy": o["spec"].get("updateStrategy"),
                "template.labels": t["metadata"].get("labels"), "template.spec": t["spec"]}
    if kind == "ConfigMap":
        return config_map_data(o)
    if kind in ("Service", "NetworkPolicy", "ServiceMonitor", "PodMonitor", "PrometheusRule"):
        return {"spec": o["spec"]}
    if kind == "ClusterRole":
        return {"rules": o["rules"]}
    if kind == "ClusterRoleBinding":
        return {"roleRef": o["roleRef"], "subjects": o["subjects"]}
    if kind == "ServiceAccount":
        return {"automountServiceAccountToken": o.get("automountServiceAccountToken")}
    if kind == "Namespace":
        return {"labels": o["metadata"].get("labels")}
    return {"whole": o}


def diff(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in b:
                out.append(f"{path}.{k}: only in kustomize: {json.dumps(a[k])[:200]}")
            elif k not in a:
                out.append(f"{path}.{k}: only in helm: {json.dumps(b[k])[:200]}")
            else:
                diff(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            name = x.get("name") if isinstance(x, dict) else None
            diff(x, y, f"{path}[{name if name else i}]", out)
    elif a != b:
        out.append(f"{path}: kustomize {json.dumps(a)[:200]} != helm {json.dumps(b)[:200]}")


def main():
    args = sys.argv[1:]
    only, allow = None, set()
    if "--only" in args:
        i = args.index("--only")
        only = set(args[i + 1].split(","))
        del args[i:i + 2]
    if "--allow-missing" in args:
        i = args.index("--allow-missing")
        allow = set(args[i + 1].split(","))
        del args[i:i + 2]
    kust, helm = load(args[0]), load(args[1])
    bad = compared = 0
    for key in sorted(set(kust) | set(helm)):
        kind, name = key
        if only and kind not in only and f"{kind}/{name}" not in only:
            continue
        if key not in helm or key not in kust:
            side = "kustomize" if key in kust else "helm"
            if f"{kind}/{name}" in allow:
                print(f"  {kind}/{name}: only in {side} (allowed)")
                continue
            print(f"FAIL: {kind}/{name}: only in {side}")
            bad += 1
            continue
        out = []
        diff(prune(fields(kust[key])), prune(fields(helm[key])), f"{kind}/{name}", out)
        compared += 1
        for line in out:
            print(f"FAIL: {line}")
        bad += bool(out)
    print(f"  {compared} objects compared, {bad} differ")
    return 1 if bad or not compared else 0


if __name__ == "__main__":
    sys.exit(main())
