// SPDX-License-Identifier: Apache-2.0
/*
 * Kubernetes names for the ledger (namer.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kepler/log.h"
#include "kepler/secret.h"
#include "namer.h"

struct kepler_namer {
	struct kepler_kube *kube;
	struct kepler_ledger_namer namer;
};

static bool name_container(void *ctx, const char *id, const char *pod_uid, const char **ret_name,
			   const char **ret_pod_uid)
{
	const struct kepler_kube_pod *pod = NULL;
	const struct kepler_kube_container *c = kepler_kube_container(ctx, id, pod_uid, &pod);

	if (!c)
		return false;
	*ret_name = c->name;
	*ret_pod_uid = pod->uid;
	return true;
}

static bool name_pod(void *ctx, const char *uid, struct kepler_ledger_pod_names *ret)
{
	const struct kepler_kube_pod *p = kepler_kube_pod(ctx, uid);

	if (!p)
		return false;
	*ret = (struct kepler_ledger_pod_names){ .name = p->name,
						 .ns = p->ns,
						 .owner_kind = p->owner_kind,
						 .owner_name = p->owner_name,
						 .labels = p->labels };
	return true;
}

/* kube.kubelet-url, else https://$HOST_IP:10250 (brackets for IPv6), else "". */
static void kubelet_url(const struct kepler_config *cfg, char *buf, size_t size)
{
	const char *ip = getenv("HOST_IP");

	if (cfg->collectd.kube_kubelet_url && cfg->collectd.kube_kubelet_url[0])
		snprintf(buf, size, "%s", cfg->collectd.kube_kubelet_url);
	else if (ip && ip[0])
		snprintf(buf, size, strchr(ip, ':') ? "https://[%s]:10250" : "https://%s:10250", ip);
	else
		buf[0] = '\0';
}

static const char *source_said(enum kepler_kube_source s)
{
	return s == KEPLER_KUBE_LOGS      ? "the kubelet's log links"
	       : s == KEPLER_KUBE_KUBELET ? "the kubelet"
					  : "the kubelet when a token is present, else its log links";
}

int kepler_namer_open(const struct kepler_config *cfg, struct kepler_namer **ret)
{
	char url[1024];
	struct kepler_kube_params p = {
		.source = cfg->collectd.kube_pod_source == KEPLER_POD_SOURCE_KUBELET ? KEPLER_KUBE_KUBELET
			  : cfg->collectd.kube_pod_source == KEPLER_POD_SOURCE_LOGS  ? KEPLER_KUBE_LOGS
										     : KEPLER_KUBE_AUTO,
		.kubelet_url = url,
		.token_file = cfg->collectd.kube_token_file,
		.token_owner = kepler_secret_owner(cfg->collectd.collector_user),
		.ca_file = cfg->collectd.kube_ca_file,
		.insecure = cfg->collectd.kube_insecure,
		.log_dir = cfg->collectd.kube_log_dir,
		.poll_ns = cfg->collectd.kube_poll_interval_ns,
		.pod_labels = (const char *const *)cfg->collectd.kube_pod_labels.items,
		.npod_labels = cfg->collectd.kube_pod_labels.count,
	};
	struct kepler_error err = { 0 };
	struct kepler_namer *n;
	int r;

	*ret = NULL;
	if (!cfg->collectd.kube_enabled)
		return 0;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	kubelet_url(cfg, url, sizeof(url));
	if (p.source == KEPLER_KUBE_AUTO && !url[0]) {
		kepler_info("kube: no kube.kubelet-url and no HOST_IP: names come from the kubelet's logs "
			    "in %s",
			    cfg->collectd.kube_log_dir);
		p.source = KEPLER_KUBE_LOGS;
	}
	r = kepler_kube_open(&p, &n->kube, &err);
	if (r < 0) {
		kepler_err("kube: %s", err.msg);
		free(n);
		return r;
	}
	n->namer =
		(struct kepler_ledger_namer){ .container = name_container, .pod = name_pod, .ctx = n->kube };
	kepler_info("kube: names from %s, polled every %.0f s", source_said(p.source),
		    (double)p.poll_ns / 1e9);
	*ret = n;
	return 0;
}

struct kepler_kube *kepler_namer_kube(const struct kepler_namer *n)
{
	return n ? n->kube : NULL;
}

const struct kepler_ledger_namer *kepler_namer_refresh(struct kepler_namer *n)
{
	if (!n)
		return NULL;
	kepler_kube_refresh(n->kube);
	return &n->namer;
}

void kepler_namer_close(struct kepler_namer *n)
{
	if (!n)
		return;
	kepler_kube_close(n->kube);
	free(n);
}
