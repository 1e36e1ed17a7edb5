// Validate every object of a rendered multi-document YAML (stdin) against
// the Kubernetes schemas (kubernetes-models, and the Prometheus Operator's
// for ServiceMonitor and PrometheusRule), offline. Exit 1 on any error.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const groups = {
  v1: "kubernetes-models/v1",
  "apps/v1": "kubernetes-models/apps/v1",
  "rbac.authorization.k8s.io/v1": "kubernetes-models/rbac.authorization.k8s.io/v1",
  "networking.k8s.io/v1": "kubernetes-models/networking.k8s.io/v1",
  "monitoring.coreos.com/v1": "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1",
};
let failed = 0, n = 0;
for (const doc of parseAllDocuments(readFileSync(0, "utf8"))) {
  const obj = doc.toJS();
  if (!obj) continue;
  n++;
  const name = `${obj.kind} ${obj.metadata?.namespace ? obj.metadata.namespace + "/" : ""}${obj.metadata?.name}`;
  const mod = groups[obj.apiVersion];
  try {
    if (!mod) throw new Error(`no schema for apiVersion ${obj.apiVersion}`);
    const Kind = (await import(mod))[obj.kind];
    if (!Kind) throw new Error(`no schema for kind ${obj.kind} in ${obj.apiVersion}`);
    new Kind(obj).validate();
    console.log(`ok: ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL: ${name}: ${e.message}`);
  }
}
console.log(`${n} objects, ${failed} invalid`);
process.exit(failed || !n ? 1 : 0);
