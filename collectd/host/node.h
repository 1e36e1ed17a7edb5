/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/host/node.h: who this node is, as the collector names it to the store
 * (the store's meta) and to a BMC (Redfish's system of this node).
 */
#ifndef KEPLER_COLLECTD_NODE_H
#define KEPLER_COLLECTD_NODE_H

#include <stddef.h>

#include "kepler/config.h"
#include "kepler/cpuinfo.h"
#include "kepler/store.h"

/* The node's name into @buf: kube.node-name, else $NODE_NAME, else the host name ("" if none). */
void kepler_node_name(const struct kepler_config *cfg, char *buf, size_t size);

/*
 * The store's meta for this start: host and node names, machine and boot
 * IDs (the boot ID read through host.procfs), the first CPU's model, this
 * process's PID, start time and interval. Cannot fail: what cannot be read
 * is left empty.
 */
void kepler_node_meta(const struct kepler_config *cfg, const struct kepler_cpuinfo *cpus,
		      struct kepler_store_meta *ret);

#endif /* KEPLER_COLLECTD_NODE_H */
