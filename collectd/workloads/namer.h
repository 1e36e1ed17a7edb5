/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/workloads/namer.h: the collector's glue to Kubernetes names (kube.*). It
 * opens the kube module (workloads/kube.h: the kubelet or its log links,
 * polled on a thread of its own) and gives the ledger its namer over it.
 */
#ifndef KEPLER_COLLECTD_NAMER_H
#define KEPLER_COLLECTD_NAMER_H

#include "kepler/config.h"
#include "kube.h"
#include "ledger.h"

struct kepler_namer;

/*
 * kube.enabled: open the kube module as kube.* and $HOST_IP say, and say
 * where names come from. *@ret NULL (and 0) when kube.enabled is false.
 * Errors, logged: kepler_kube_open()'s, -ENOMEM.
 */
int kepler_namer_open(const struct kepler_config *cfg, struct kepler_namer **ret);

/* The kube module (CPU requests for attribution.idle size), or NULL for a NULL namer. */
struct kepler_kube *kepler_namer_kube(const struct kepler_namer *n);

/* Take the names the poller found since the last call; the ledger's namer (NULL for a NULL namer). */
const struct kepler_ledger_namer *kepler_namer_refresh(struct kepler_namer *n);

void kepler_namer_close(struct kepler_namer *n);

#endif /* KEPLER_COLLECTD_NAMER_H */
