/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/workloads/kube_names.h: the names Kubernetes gives the containers
 * of a node (container name, pod UID, pod name, namespace, CPU request),
 * keyed by the container id found in /proc/PID/cgroup. Built from either of
 * two sources, each parsed from its real format:
 *   - the kubelet's /pods answer (a v1 PodList): containerStatuses,
 *     initContainerStatuses and ephemeralContainerStatuses, whose
 *     containerID is "<runtime>://<64 hex>" (containerd, cri-o, docker);
 *   - the kubelet's log symlinks, /var/log/containers/
 *     <pod>_<namespace>_<container>-<id>.log -> /var/log/pods/
 *     <namespace>_<pod>_<uid>/<container>/N.log.
 * Both are untrusted (a compromised kubelet, anyone who can write the log
 * directory): every string is checked against the Kubernetes rules for its
 * kind (DNS-1123 names, RFC 4122 UIDs, 64-hex ids) and an entry that breaks
 * one is skipped and counted, never stored. Pure functions on buffers, so
 * that they are tested on real documents and fuzzed.
 */
#ifndef KEPLER_COLLECTD_KUBE_NAMES_H
#define KEPLER_COLLECTD_KUBE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kepler/config.h"
#include "kepler/error.h"
#include "workload.h"

/*
 * The most memory json-c's tree of a kubelet's answer may take (estimated before it
 * is built): with the body, the collector stays within the DaemonSet's
 * 256 MiB whatever the answer's shape.
 */
#define KEPLER_KUBE_PARSE_BUDGET (112u << 20)

#define KEPLER_KUBE_NAME_MAX 253   /* pod names: DNS-1123 subdomain */
#define KEPLER_KUBE_LABEL_MAX 63   /* namespaces, container names: DNS-1123 label */
#define KEPLER_KUBE_MAX_PODS 20000 /* a node runs at most a few hundred */
#define KEPLER_KUBE_MAX_CONTAINERS 100000

/* "KEY=VALUE,..." of at most KEPLER_KUBE_POD_LABELS_MAX labels */
#define KEPLER_KUBE_LABELS_TEXT_MAX \
	(KEPLER_KUBE_POD_LABELS_MAX * (KEPLER_LABEL_KEY_MAX + KEPLER_LABEL_VALUE_MAX + 2))

struct kepler_kube_pod {
	char uid[KEPLER_POD_UID_LEN + 1];
	char name[KEPLER_KUBE_NAME_MAX + 1];
	char ns[KEPLER_KUBE_LABEL_MAX + 1];
	/*
	 * Its controller, "" for none (a bare pod, or the logs source): a
	 * ReplicaSet whose name is "<deployment>-<the pod's pod-template-hash
	 * label>" is given as that Deployment, a Job whose name is
	 * "<cronjob>-<8 or more digits>" (the minutes of its schedule) as
	 * that CronJob; any other kind as it is.
	 */
	char owner_kind[KEPLER_KUBE_LABEL_MAX + 1];
	char owner_name[KEPLER_KUBE_NAME_MAX + 1];
	char labels[KEPLER_KUBE_LABELS_TEXT_MAX + 1]; /* the labels asked for, in their order */
};

struct kepler_kube_container {
	char id[KEPLER_CONTAINER_ID_LEN + 1];
	char name[KEPLER_KUBE_LABEL_MAX + 1];
	uint32_t pod;              /* index in the table's pods */
	uint32_t cpu_request_mcpu; /* spec.resources.requests.cpu in millicores; 0: none or unknown */
};

/* An immutable table once built: containers sorted by id, pods by uid. */
struct kepler_kube_names {
	struct kepler_kube_pod *pods;
	size_t npods, pods_cap;
	struct kepler_kube_container *containers;
	size_t ncontainers, containers_cap;
	size_t skipped; /* entries refused: a malformed id, uid or name, owner or label value */
	/* the pod labels to record (kube.pod-labels), set before parsing; borrowed */
	const char *const *label_keys;
	size_t nlabel_keys;
};

/* An empty table. NULL for out of memory. */
struct kepler_kube_names *kepler_kube_names_new(void);
void kepler_kube_names_free(struct kepler_kube_names *t);

/*
 * Add the pods of a kubelet /pods answer (@len bytes of JSON, not
 * NUL-terminated) to @t, then sort it. -EBADMSG (not JSON, or not a
 * PodList: message in @err), -E2BIG (more than the maximum pods or
 * containers), -ENOMEM. On error @t holds what was added before it.
 */
int kepler_kube_names_parse_podlist(struct kepler_kube_names *t, const char *json, size_t len,
				    struct kepler_error *err);

/*
 * Add one kubelet log symlink: @name is the entry of /var/log/containers
 * ("<pod>_<namespace>_<container>-<id>.log"), @target what it points to (the
 * pod UID is read from its "<namespace>_<pod>_<uid>" directory; "" or NULL
 * when unknown: the container is named, its pod then only through the UID
 * in its cgroup). Returns 1 if added, 0 if @name is not such a link (or
 * breaks a rule: counted in skipped), -ENOMEM, -E2BIG. Call
 * kepler_kube_names_sort() once all are added.
 */
int kepler_kube_names_add_log_link(struct kepler_kube_names *t, const char *name, const char *target);

/* Sort and drop duplicate container ids (the first kept); before lookups. */
void kepler_kube_names_sort(struct kepler_kube_names *t);

/* The container of id @id, or NULL. */
const struct kepler_kube_container *kepler_kube_names_container(const struct kepler_kube_names *t,
								const char *id);
/* The pod of UID @uid, or NULL. */
const struct kepler_kube_pod *kepler_kube_names_pod(const struct kepler_kube_names *t, const char *uid);

/*
 * The controller a pod is charged to from its controller reference
 * (@kind, @name) and its pod-template-hash label (@hash, NULL if none):
 * writes the kind and name into @ret_kind and @ret_name (sizes as struct
 * kepler_kube_pod's). False if @kind or @name breaks the Kubernetes rules.
 */
bool kepler_kube_owner_resolve(const char *kind, size_t kind_len, const char *name, size_t name_len,
			       const char *hash, size_t hash_len, char *ret_kind, char *ret_name);

/* "250m" -> 250, "1" -> 1000, "0.5" -> 500, "1.25" -> 1250; false for anything else. */
bool kepler_kube_parse_cpu(const char *s, size_t len, uint32_t *ret_mcpu);

#endif /* KEPLER_COLLECTD_KUBE_NAMES_H */
