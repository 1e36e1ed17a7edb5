// SPDX-License-Identifier: Apache-2.0
/*
 * Benchmark, not a test: what Kubernetes names cost the collector.
 *   bench_kube generate PODS CONTAINERS   a kubelet-like PodList on stdout
 *                                         (pods with labels, annotations,
 *                                         env, probes, statuses: ~9 KB each)
 *   bench_kube parse FILE [RUNS]          CPU per parse into a names table
 *   bench_kube poll URL TOKEN CA [POLLS]  the collector's kube thread polling
 *                                         URL once a second: CPU per poll
 *                                         (curl, TLS, parse) and peak RSS
 * tools/bench-kube.sh runs all three against tests/fakes/fake_kubelet.py.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kube.h"
#include "kube_names.h"

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

static long peak_rss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static void container_spec(unsigned p, unsigned c, bool last)
{
	printf("{\"name\": \"app-%u\", \"image\": \"registry.example.com/team/app-%u:1.%u.%u\", "
	       "\"command\": [\"/bin/server\", \"--port=8080\", \"--log-level=info\"], "
	       "\"ports\": [{\"name\": \"http\", \"containerPort\": 8080, \"protocol\": \"TCP\"}], "
	       "\"env\": [{\"name\": \"POD_NAME\", \"valueFrom\": {\"fieldRef\": {\"apiVersion\": \"v1\", "
	       "\"fieldPath\": \"metadata.name\"}}}, {\"name\": \"GOMAXPROCS\", \"value\": \"2\"}], "
	       "\"resources\": {\"limits\": {\"cpu\": \"1\", \"memory\": \"512Mi\"}, \"requests\": {\"cpu\": "
	       "\"%um\", \"memory\": \"256Mi\"}}, "
	       "\"livenessProbe\": {\"httpGet\": {\"path\": \"/healthz\", \"port\": 8080, \"scheme\": \"HTTP\"}, "
	       "\"initialDelaySeconds\": 10, \"timeoutSeconds\": 1, \"periodSeconds\": 10, "
	       "\"successThreshold\": 1, \"failureThreshold\": 3}, "
	       "\"volumeMounts\": [{\"name\": \"kube-api-access\", \"readOnly\": true, \"mountPath\": "
	       "\"/var/run/secrets/kubernetes.io/serviceaccount\"}], "
	       "\"terminationMessagePath\": \"/dev/termination-log\", \"imagePullPolicy\": \"IfNotPresent\"}%s",
	       c, p, c, p % 10, 100 + c * 50, last ? "" : ", ");
}

static void container_status(unsigned p, unsigned c, unsigned id, bool last)
{
	printf("{\"name\": \"app-%u\", \"state\": {\"running\": {\"startedAt\": \"2026-11-20T08:14:07Z\"}}, "
	       "\"lastState\": {}, \"ready\": true, \"restartCount\": 0, "
	       "\"image\": \"registry.example.com/team/app-%u:1.%u.%u\", "
	       "\"imageID\": \"registry.example.com/team/app@sha256:%064x\", "
	       "\"containerID\": \"containerd://%064x\", \"started\": true}%s",
	       c, p, c, p % 10, id, id, last ? "" : ", ");
}

static int generate(unsigned pods, unsigned containers)
{
	unsigned id = 1;

	printf("{\"kind\": \"PodList\", \"apiVersion\": \"v1\", \"metadata\": {}, \"items\": [");
	for (unsigned p = 0; p < pods; p++) {
		unsigned n = containers / pods + (p < containers % pods);

		printf("%s{\"metadata\": {\"name\": \"service-%u-7d4b9c8f6-x%04u\", \"generateName\": "
		       "\"service-%u-7d4b9c8f6-\", \"namespace\": \"team-%u\", \"uid\": "
		       "\"%08x-1f2d-4e3a-9b8c-%012x\", \"resourceVersion\": \"%u\", "
		       "\"creationTimestamp\": \"2026-11-20T08:14:03Z\", \"labels\": {\"app\": \"service-%u\", "
		       "\"pod-template-hash\": \"7d4b9c8f6\", \"team\": \"team-%u\"}, \"annotations\": "
		       "{\"kubernetes.io/config.seen\": \"2026-11-20T08:14:03.123456789Z\", "
		       "\"kubernetes.io/config.source\": \"api\", \"prometheus.io/scrape\": \"true\"}, "
		       "\"ownerReferences\": [{\"apiVersion\": \"apps/v1\", \"kind\": \"ReplicaSet\", \"name\": "
		       "\"service-%u-7d4b9c8f6\", \"uid\": \"5c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f\", "
		       "\"controller\": true, \"blockOwnerDeletion\": true}]}, \"spec\": {\"containers\": [",
		       p ? ", " : "", p, p, p, p % 20, p, p, 80000 + p, p, p % 20, p);
		for (unsigned c = 0; c < n; c++)
			container_spec(p, c, c + 1 == n);
		printf("], \"restartPolicy\": \"Always\", \"terminationGracePeriodSeconds\": 30, "
		       "\"dnsPolicy\": \"ClusterFirst\", \"serviceAccountName\": \"default\", \"nodeName\": "
		       "\"worker-3\", \"securityContext\": {}, \"schedulerName\": \"default-scheduler\", "
		       "\"priority\": 0, \"enableServiceLinks\": true, \"preemptionPolicy\": "
		       "\"PreemptLowerPriority\"}, \"status\": {\"phase\": \"Running\", \"conditions\": "
		       "[{\"type\": \"Ready\", \"status\": \"True\", \"lastProbeTime\": null, "
		       "\"lastTransitionTime\": \"2026-11-20T08:14:09Z\"}], \"hostIP\": \"10.0.0.13\", "
		       "\"podIP\": \"10.244.3.%u\", \"startTime\": \"2026-11-20T08:14:03Z\", \"qosClass\": "
		       "\"Burstable\", \"containerStatuses\": [",
		       p % 250);
		for (unsigned c = 0; c < n; c++)
			container_status(p, c, id++, c + 1 == n);
		printf("]}}");
	}
	printf("]}\n");
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int parse(const char *path, int runs)
{
	FILE *f = fopen(path, "rb");
	double *t = calloc((size_t)runs, sizeof(*t));
	size_t len = 0, npods = 0, nc = 0;
	char *buf;
	long rss0;

	if (!f || !t || !(buf = malloc(64u << 20)))
		return 1;
	len = fread(buf, 1, 64u << 20, f);
	fclose(f);
	rss0 = peak_rss_kib();
	for (int i = 0; i < runs; i++) {
		struct kepler_kube_names *names = kepler_kube_names_new();
		struct kepler_error err = { 0 };
		double c0 = cpu_s();
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		if (kepler_kube_names_parse_podlist(names, buf, len, &err) < 0) {
			fprintf(stderr, "bench_kube: %s\n", err.msg);
			return 1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		(void)c0;
		t[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		npods = names->npods;
		nc = names->ncontainers;
		kepler_kube_names_free(names);
	}
	qsort(t, (size_t)runs, sizeof(*t), cmp_double);
	printf("parse: %zu bytes, %zu pods, %zu containers: median %.2f ms, min %.2f ms, max %.2f ms over %d "
	       "runs; peak RSS %ld KiB (%ld KiB above the file loaded)\n",
	       len, npods, nc, t[runs / 2], t[0], t[runs - 1], runs, peak_rss_kib(), peak_rss_kib() - rss0);
	free(buf);
	free(t);
	return 0;
}

static int poll(const char *url, const char *token, const char *ca, int polls)
{
	struct kepler_kube_params p = { .source = KEPLER_KUBE_KUBELET,
					.kubelet_url = url,
					.token_file = token,
					.token_owner = geteuid(),
					.ca_file = ca,
					.poll_ns = 1000000000ULL };
	struct kepler_error err = { 0 };
	struct kepler_kube *k;
	uint64_t good = 0, failed = 0;
	long rss0 = peak_rss_kib();
	double c0, c1;

	if (kepler_kube_open(&p, &k, &err) < 0) {
		fprintf(stderr, "bench_kube: %s\n", err.msg);
		return 1;
	}
	kepler_kube_refresh(k);  /* starts the thread */
	while (!good && !failed) /* the first poll sets up TLS: not counted */
		usleep(10000), kepler_kube_counts(k, &good, &failed);
	c0 = cpu_s();
	while ((int)good + (int)failed < polls + 1)
		usleep(10000), kepler_kube_counts(k, &good, &failed);
	c1 = cpu_s();
	kepler_kube_close(k);
	printf("poll: %d polls (%llu good, %llu failed) of %s: %.2f ms CPU per poll (curl, TLS, parse); "
	       "peak RSS %ld KiB (%ld KiB above the start)\n",
	       polls, (unsigned long long)good - 1, (unsigned long long)failed, url, (c1 - c0) * 1e3 / polls,
	       peak_rss_kib(), peak_rss_kib() - rss0);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "generate"))
		return generate((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
	if (argc >= 3 && !strcmp(argv[1], "parse"))
		return parse(argv[2], argc > 3 ? atoi(argv[3]) : 50);
	if (argc >= 5 && !strcmp(argv[1], "poll"))
		return poll(argv[2], argv[3], argv[4], argc > 5 ? atoi(argv[5]) : 10);
	fprintf(stderr, "usage: bench_kube generate PODS CONTAINERS | parse FILE [RUNS] | "
			"poll URL TOKEN_FILE CA_FILE [POLLS]\n");
	return 2;
}
