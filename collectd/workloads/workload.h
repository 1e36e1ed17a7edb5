/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/workloads/workload.h: what a process belongs to, from what procfs says
 * about it: its container (and pod) from /proc/PID/cgroup, its VM from
 * the hypervisor's /proc/PID/cmdline. Pure functions on buffers, so that
 * they are tested on real-world lines and fuzzed; the contents are
 * untrusted (anyone may name a cgroup or pass arguments).
 */
#ifndef KEPLER_COLLECTD_WORKLOAD_H
#define KEPLER_COLLECTD_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>

#define KEPLER_CONTAINER_ID_LEN 64
#define KEPLER_POD_UID_LEN 36
#define KEPLER_VM_ID_MAX 64
#define KEPLER_VM_NAME_MAX 128

struct kepler_container_ref {
	char id[KEPLER_CONTAINER_ID_LEN + 1];
	const char *runtime;                  /* docker, containerd, crio, podman, kubernetes */
	char pod_uid[KEPLER_POD_UID_LEN + 1]; /* "" if not in a Kubernetes pod */
};

struct kepler_vm_ref {
	char id[KEPLER_VM_ID_MAX];     /* -uuid, else the name, else a hash of the command line */
	char name[KEPLER_VM_NAME_MAX]; /* -name (guest=), else <hypervisor>-<id prefix> */
	const char *hypervisor;        /* kvm, xen */
};

/*
 * Find the container of a process from the text of its /proc/PID/cgroup
 * (cgroup v1 and v2 lines, "ID:controllers:/path"). When several container
 * ids appear (nesting: kind, docker in docker) the deepest wins. Returns
 * true and fills @ret for a container, false for none.
 */
bool kepler_cgroup_container(const char *text, size_t len, struct kepler_container_ref *ret);

/*
 * The process's cgroup path from its /proc/PID/cgroup text: the cgroup v2
 * line ("0::/path"), else the v1 line of the cpu controller, else the
 * first line. Written to @buf (truncated to @size); "" if there is none.
 */
void kepler_cgroup_path(const char *text, size_t len, char *buf, size_t size);

/*
 * The path in the hierarchy of the cpu controller, whose weights size
 * workloads (attribution.idle size): the cgroup v1 line of the cpu
 * controller, else the v2 line, else the first. As kepler_cgroup_path().
 */
void kepler_cgroup_cpu_path(const char *text, size_t len, char *buf, size_t size);

/*
 * Recognise a hypervisor process (qemu-system-*, qemu-kvm, kvm) from its
 * NUL-separated /proc/PID/cmdline. Returns true and fills @ret for a VM.
 */
bool kepler_cmdline_vm(const char *cmdline, size_t len, struct kepler_vm_ref *ret);

#endif /* KEPLER_COLLECTD_WORKLOAD_H */
