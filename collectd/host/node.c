// SPDX-License-Identifier: Apache-2.0
/*
 * The node's identity (node.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kepler/clock.h"
#include "node.h"
#include "procfs.h"

void kepler_node_name(const struct kepler_config *cfg, char *buf, size_t size)
{
	const char *env = getenv("NODE_NAME");

	if (cfg->collectd.kube_node_name && cfg->collectd.kube_node_name[0])
		snprintf(buf, size, "%s", cfg->collectd.kube_node_name);
	else if (env && env[0])
		snprintf(buf, size, "%s", env);
	else if (gethostname(buf, size - 1) < 0)
		buf[0] = '\0';
	buf[size - 1] = '\0';
}

static void read_first_line(const char *path, char *buf, size_t size)
{
	size_t len;

	buf[0] = '\0';
	if (kepler_read_file(path, buf, size, &len) < 0 && len == 0)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

void kepler_node_meta(const struct kepler_config *cfg, const struct kepler_cpuinfo *cpus,
		      struct kepler_store_meta *m)
{
	char path[4200];

	memset(m, 0, sizeof(*m));
	gethostname(m->hostname, sizeof(m->hostname) - 1);
	kepler_node_name(cfg, m->node_name, sizeof(m->node_name));
	/*
	 * The host's, through its PID 1's root (host.procfs; readable at start,
	 * with CAP_SYS_PTRACE): in a pod, /etc/machine-id is the image's
	 */
	snprintf(path, sizeof(path), "%s/1/root/etc/machine-id", cfg->collectd.host_procfs);
	read_first_line(path, m->machine_id, sizeof(m->machine_id));
	if (!m->machine_id[0])
		read_first_line("/etc/machine-id", m->machine_id, sizeof(m->machine_id));
	snprintf(path, sizeof(path), "%s/sys/kernel/random/boot_id", cfg->collectd.host_procfs);
	read_first_line(path, m->boot_id, sizeof(m->boot_id));
	if (cpus->n)
		snprintf(m->cpu_model, sizeof(m->cpu_model), "%s", cpus->cpus[0].model_name);
	m->collector_pid = (uint32_t)getpid();
	m->collector_start_ns = kepler_wall_ns();
	m->collector_interval_ns = cfg->collectd.monitor_interval_ns;
}
