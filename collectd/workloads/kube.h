/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/workloads/kube.h: Kubernetes names for the collector's containers
 * and pods, kept fresh by a thread of its own so that the interval loop
 * never waits on the kubelet.
 *
 * The thread polls one source every poll interval (and early, at most once
 * per KEPLER_KUBE_EARLY_GAP, when the loop meets a container of a pod it
 * cannot name): the kubelet's /pods over HTTPS (libcurl; bearer token
 * re-read each poll, since projected tokens rotate; strict timeouts and a
 * body cap) or the kubelet's log symlinks. A good poll publishes a new
 * table; a failed one keeps the last good table. Each change of state
 * (working, or failing in a given way) is logged once.
 *
 * The thread opens no listening socket and holds nothing the collector
 * does not: it reads a token and a CA file and talks to one URL.
 */
#ifndef KEPLER_COLLECTD_KUBE_H
#define KEPLER_COLLECTD_KUBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kepler/error.h"
#include "kube_names.h"

#define KEPLER_KUBE_EARLY_GAP_NS (2ULL * 1000000000ULL)
#define KEPLER_KUBE_MAX_BODY (32u << 20) /* a kubelet with 110 pods answers 1-5 MB */

enum kepler_kube_source {
	KEPLER_KUBE_AUTO,    /* the kubelet when the token file exists, else the logs */
	KEPLER_KUBE_KUBELET, /* GET <kubelet_url>/pods */
	KEPLER_KUBE_LOGS,    /* <log_dir>/containers symlinks */
};

struct kepler_kube_params {
	enum kepler_kube_source source;
	const char *kubelet_url; /* "https://10.0.0.5:10250"; "/pods" is appended */
	const char *token_file;  /* bearer token, re-read every poll, under the secret-file rules */
	uid_t token_owner;       /* who besides root may own it: kepler_secret_owner(collector.user) */
	const char *ca_file;     /* CA of the kubelet's serving certificate; "" or absent: system CAs */
	bool insecure;           /* skip TLS verification (self-signed kubelet certificates) */
	const char *log_dir;     /* holds containers/ and pods/ */
	uint64_t poll_ns;        /* between polls */
	uint64_t timeout_ns;     /* one request's limit; 0: min(10 s, poll_ns) */
	size_t max_body;         /* bytes; 0: KEPLER_KUBE_MAX_BODY */
	/* pod labels to record (kube.pod-labels); borrowed: they outlive the watcher */
	const char *const *pod_labels;
	size_t npod_labels;
};

struct kepler_kube;

/*
 * Prepare the watcher. Its thread starts at the first
 * kepler_kube_refresh(), which the collector calls after it has dropped
 * its privileges: capabilities belong to threads, and one started before
 * the drop would keep them. -EINVAL (a URL that is not http(s)://),
 * -ENOMEM, -EIO (libcurl did not start).
 */
int kepler_kube_open(const struct kepler_kube_params *p, struct kepler_kube **ret, struct kepler_error *err);

/*
 * The loop, once per interval: adopt the newest table the thread
 * published (the first call starts the thread). Never blocks.
 */
void kepler_kube_refresh(struct kepler_kube *k);

/*
 * The names of container @id, or NULL. When it is unknown and @pod_uid
 * (from its cgroup) says it belongs to a pod, the thread is asked for an
 * early poll, once per container id. Valid until the next refresh.
 */
const struct kepler_kube_container *kepler_kube_container(struct kepler_kube *k, const char *id,
							  const char *pod_uid,
							  const struct kepler_kube_pod **ret_pod);

/* The pod of UID @uid, or NULL. Valid until the next refresh. */
const struct kepler_kube_pod *kepler_kube_pod(struct kepler_kube *k, const char *uid);

/* Polls so far: good and failed (tests and diagnostics). */
void kepler_kube_counts(struct kepler_kube *k, uint64_t *ret_good, uint64_t *ret_failed);

/* Stop the thread (an HTTP request in flight is abandoned) and free. NULL is fine. */
void kepler_kube_close(struct kepler_kube *k);

#endif /* KEPLER_COLLECTD_KUBE_H */
