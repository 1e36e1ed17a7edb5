#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The DaemonSet's containers as podman arguments, for tools/test-node.sh.

Reads the objects that `helm template deploy/helm/kepler-c` renders (the
chart's default values: the kustomize default's pod, which
tools/test-k8s-manifests.sh checks field by field), takes the DaemonSet and
the ConfigMap its "config" volume names, and writes, for each container of
the pod, the podman arguments that give it what the kubelet would:
  hostPID                       --pid host
  securityContext.runAsUser/Group          --user U:G
  capabilities drop/add         --cap-drop / --cap-add
  allowPrivilegeEscalation: false          --security-opt no-new-privileges
  readOnlyRootFilesystem        --read-only
  seccompProfile Unconfined / RuntimeDefault  seccomp=unconfined / podman's default
  resources.limits              --cpus, --memory
  env (value, fieldRef spec.nodeName, status.hostIP)  -e
  volumeMounts                  -v SOURCE:PATH[:ro], where SOURCE is:
     hostPath /sys, /proc, /var/log   the host's own
     hostPath /var/lib/kepler-c       HOSTROOT/var/lib/kepler-c (not the host's)
     configMap                        CONFIGDIR (the ConfigMap's data, written there)
     projected token                  TOKENDIR (token and ca.crt, written by the caller)
  command and args              the image's command
Each container's own cgroup namespace (--cgroupns private) and its pod's
cgroup (--cgroup-parent) are the caller's, as is the network.

Usage: node_podman_args.py RENDERED.yaml HOSTROOT CONFIGDIR TOKENDIR NODE_NAME HOST_IP OUTDIR
Writes OUTDIR/<container>.args (NUL-separated podman arguments, the image's
command last, after a line "--") and CONFIGDIR/<key> for each key of the
ConfigMap's data.
"""
import os
import sys

import yaml

rendered, hostroot, configdir, tokendir, node_name, host_ip, outdir = sys.argv[1:8]

with open(rendered) as f:
    objects = [o for o in yaml.safe_load_all(f) if o]
daemonsets = [o for o in objects if o["kind"] == "DaemonSet"]
if len(daemonsets) != 1:
    raise SystemExit(f"node_podman_args.py: {rendered} has {len(daemonsets)} DaemonSets, not one")
spec = daemonsets[0]["spec"]["template"]["spec"]
volumes = {v["name"]: v for v in spec["volumes"]}
cm_name = volumes["config"]["configMap"]["name"]
cm = next((o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == cm_name), None)
if cm is None:
    raise SystemExit(f"node_podman_args.py: no ConfigMap {cm_name} in {rendered}")
os.makedirs(configdir, exist_ok=True)
for key, text in cm["data"].items():
    with open(os.path.join(configdir, key), "w") as f:
        f.write(text)


def source_of(vol):
    if "hostPath" in vol:
        path = vol["hostPath"]["path"]
        if path in ("/sys", "/proc", "/var/log"):
            return path
        local = os.path.join(hostroot, path.lstrip("/"))
        os.makedirs(local, exist_ok=True)  # DirectoryOrCreate
        return local
    if "configMap" in vol:
        return configdir
    if "projected" in vol:
        return tokendir
    raise SystemExit(f"node_podman_args.py: volume {vol['name']}: a kind this rehearsal does not know")


def cpus(q):
    q = str(q)
    return str(int(q[:-1]) / 1000) if q.endswith("m") else q


def memory(q):
    q = str(q)
    for suffix, unit in (("Gi", "g"), ("Mi", "m"), ("Ki", "k")):
        if q.endswith(suffix):
            return q[: -len(suffix)] + unit
    return q


field_values = {"spec.nodeName": node_name, "status.hostIP": host_ip}
os.makedirs(outdir, exist_ok=True)
for c in spec["containers"]:
    args = []
    if spec.get("hostPID"):
        args += ["--pid", "host"]
    sc = c.get("securityContext", {})
    if "runAsUser" in sc:
        args += ["--user", f"{sc['runAsUser']}:{sc.get('runAsGroup', sc['runAsUser'])}"]
    caps = sc.get("capabilities", {})
    for cap in caps.get("drop", []):
        args += ["--cap-drop", cap]
    for cap in caps.get("add", []):
        args += ["--cap-add", cap]
    if sc.get("allowPrivilegeEscalation") is False:
        args += ["--security-opt", "no-new-privileges"]
    if sc.get("readOnlyRootFilesystem"):
        args += ["--read-only"]
    if sc.get("privileged"):
        args += ["--privileged"]
    if sc.get("seccompProfile", {}).get("type") == "Unconfined":
        args += ["--security-opt", "seccomp=unconfined"]
    limits = c.get("resources", {}).get("limits", {})
    if "cpu" in limits:
        args += ["--cpus", cpus(limits["cpu"])]
    if "memory" in limits:
        args += ["--memory", memory(limits["memory"])]
    for e in c.get("env", []):
        if "value" in e:
            args += ["-e", f"{e['name']}={e['value']}"]
        else:
            args += ["-e", f"{e['name']}={field_values[e['valueFrom']['fieldRef']['fieldPath']]}"]
    for m in c.get("volumeMounts", []):
        mode = ":ro" if m.get("readOnly") else ""
        args += ["-v", f"{source_of(volumes[m['name']])}:{m['mountPath']}{mode}"]
    args += ["--"] + c["command"] + c.get("args", [])
    with open(os.path.join(outdir, c["name"] + ".args"), "w") as f:
        f.write("\0".join(args) + "\0")
    print(c["name"] + ": " + " ".join(args))
