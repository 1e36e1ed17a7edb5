// SPDX-License-Identifier: Apache-2.0
/*
 * Kubernetes names: the kubelet's PodList (a real-format answer with init
 * and ephemeral containers, three runtimes, the same pod name in two
 * namespaces, a waiting container and hostile entries), the kubelet's log
 * links, CPU requests, and the thread that polls a source.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "kube.h"
#include "kube_names.h"

#define HEX(c)                                                                                              \
	c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c \
		c c c c c c c c c c c c c c
#define UID_SHOP "0b6e5a4c-1f2d-4e3a-9b8c-7d6e5f4a3b21"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;

	assert_non_null(f);
	buf = malloc(1 << 20);
	assert_non_null(buf);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

static const struct kepler_kube_container *expect(const struct kepler_kube_names *t, const char *id,
						  const char *name, const char *pod, const char *ns,
						  uint32_t mcpu)
{
	const struct kepler_kube_container *c = kepler_kube_names_container(t, id);

	assert_non_null(c);
	assert_string_equal(c->name, name);
	assert_string_equal(t->pods[c->pod].name, pod);
	assert_string_equal(t->pods[c->pod].ns, ns);
	assert_int_equal(c->cpu_request_mcpu, mcpu);
	return c;
}

static void test_podlist(void **state)
{
	struct kepler_kube_names *t = kepler_kube_names_new();
	struct kepler_error err = { 0 };
	const struct kepler_kube_container *a, *b;
	size_t len;
	char *json = slurp(KEPLER_SOURCE_DIR "/tests/data/kubelet/podlist.json", &len);

	(void)state;
	KEPLER_OK(kepler_kube_names_parse_podlist(t, json, len, &err));
	assert_int_equal(t->npods, 5); /* the evil one refused; the pending one has no container */
	assert_int_equal(t->ncontainers, 6);
	assert_int_equal(t->skipped, 2); /* "Evil Pod..." and the short container id */
	expect(t, HEX("1"), "init-db", "web-7d4b9c8f6-x2x9k", "shop", 50);
	a = expect(t, HEX("2"), "nginx", "web-7d4b9c8f6-x2x9k", "shop", 250);
	expect(t, HEX("3"), "log-shipper", "web-7d4b9c8f6-x2x9k", "shop", 100);
	expect(t, HEX("4"), "debugger-8xk2p", "web-7d4b9c8f6-x2x9k", "shop", 0);
	b = expect(t, HEX("5"), "nginx", "web-7d4b9c8f6-x2x9k", "staging", 2000);       /* cri-o:// */
	expect(t, HEX("6"), "coredns", "coredns-5d78c9869d-4kq8j", "kube-system", 100); /* docker:// */
	assert_int_not_equal(a->pod, b->pod); /* the same pod name in two namespaces: two pods */
	assert_string_equal(t->pods[a->pod].uid, UID_SHOP);
	assert_string_equal(kepler_kube_names_pod(t, UID_SHOP)->ns, "shop");
	assert_string_equal(kepler_kube_names_pod(t, "12345678-90ab-4cde-8f01-234567890abc")->name,
			    "batch-pending");
	assert_null(kepler_kube_names_container(t, HEX("7")));
	assert_null(kepler_kube_names_container(t, HEX("8")));
	assert_null(kepler_kube_names_pod(t, "deadbeef-0000-4000-8000-000000000000"));
	kepler_kube_names_free(t);
	free(json);
}

/*
 * Owners and labels: a ReplicaSet's pod as its Deployment (the
 * pod-template-hash label matches the name's suffix), a Job's as its CronJob
 * (a name ending in 8+ digits), a StatefulSet's and a DaemonSet's as they
 * are, a bare pod with none, a non-controller reference ignored; the labels
 * kube.pod-labels names, in its order, a value that breaks the rules skipped.
 */
static void test_owners_and_labels(void **state)
{
	static const char *const keys[] = { "team", "app.kubernetes.io/name", "absent" };
	struct kepler_kube_names *t = kepler_kube_names_new();
	struct kepler_error err = { 0 };
	char kind[KEPLER_KUBE_LABEL_MAX + 1], name[KEPLER_KUBE_NAME_MAX + 1];
	const struct kepler_kube_pod *p;
	size_t len;
	char *json = slurp(KEPLER_SOURCE_DIR "/tests/data/kubelet/podlist.json", &len);

	(void)state;
	t->label_keys = keys;
	t->nlabel_keys = 3;
	KEPLER_OK(kepler_kube_names_parse_podlist(t, json, len, &err));
	p = kepler_kube_names_pod(t, UID_SHOP);
	assert_string_equal(p->owner_kind, "Deployment");
	assert_string_equal(p->owner_name, "web");
	assert_string_equal(p->labels, "team=shop,app.kubernetes.io/name=web");
	p = kepler_kube_names_pod(t, "12345678-90ab-4cde-8f01-234567890abc");
	assert_string_equal(p->owner_kind, "CronJob");
	assert_string_equal(p->owner_name, "nightly-report");
	assert_string_equal(p->labels, "team=data"); /* its app.kubernetes.io/name value breaks the rules */
	for (size_t i = 0; i < t->npods; i++)
		if (!strcmp(t->pods[i].name, "coredns-5d78c9869d-4kq8j")) {
			assert_string_equal(t->pods[i].owner_kind,
					    ""); /* a bare pod (a non-controller reference) */
			assert_string_equal(t->pods[i].labels, "");
		}
	kepler_kube_names_free(t);
	free(json);
	/* the rules, alone */
	assert_true(kepler_kube_owner_resolve("ReplicaSet", 10, "api-5f9c", 8, "5f9c", 4, kind, name));
	assert_string_equal(kind, "Deployment");
	assert_string_equal(name, "api");
	assert_true(kepler_kube_owner_resolve("ReplicaSet", 10, "api-5f9c", 8, "abcd", 4, kind, name));
	assert_string_equal(kind, "ReplicaSet"); /* a hash that is not its suffix: a ReplicaSet of its own */
	assert_string_equal(name, "api-5f9c");
	assert_true(kepler_kube_owner_resolve("ReplicaSet", 10, "api-5f9c", 8, NULL, 0, kind, name));
	assert_string_equal(kind, "ReplicaSet");
	assert_true(kepler_kube_owner_resolve("Job", 3, "backup-29395260", 15, NULL, 0, kind, name));
	assert_string_equal(kind, "CronJob");
	assert_string_equal(name, "backup");
	assert_true(kepler_kube_owner_resolve("Job", 3, "migrate-2", 9, NULL, 0, kind, name));
	assert_string_equal(kind, "Job"); /* a Job's own name: too few digits for a schedule */
	assert_string_equal(name, "migrate-2");
	assert_true(kepler_kube_owner_resolve("Job", 3, "29395260", 8, NULL, 0, kind, name));
	assert_string_equal(kind, "Job");
	assert_true(kepler_kube_owner_resolve("StatefulSet", 11, "db", 2, NULL, 0, kind, name));
	assert_string_equal(kind, "StatefulSet");
	assert_false(kepler_kube_owner_resolve("Stateful Set", 12, "db", 2, NULL, 0, kind, name));
	assert_false(kepler_kube_owner_resolve("Job", 3, "Evil\"Name", 9, NULL, 0, kind, name));
	assert_false(kepler_kube_owner_resolve("", 0, "db", 2, NULL, 0, kind, name));
}

static void test_podlist_garbage(void **state)
{
	static const char *const bad[] = {
		"",
		"not json",
		"{\"items\": [",
		"{\"items\": []} trailing",
		"[1, 2, 3]",
		"{\"kind\": \"Status\", \"status\": \"Failure\", \"code\": 401}",
		"{\"items\": {}}",
		"{\"items\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
		"{\"items\": [], \"x\": \"\\ud800\"}", /* a lone surrogate */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct kepler_kube_names *t = kepler_kube_names_new();
		struct kepler_error err = { 0 };
		int r = kepler_kube_names_parse_podlist(t, bad[i], strlen(bad[i]), &err);

		if (i == 8) { /* json-c takes it; nothing is named from it */
			assert_true(r == 0 || r == -EBADMSG);
		} else {
			assert_int_equal(r, -EBADMSG);
			assert_true(err.msg[0] != '\0');
		}
		assert_int_equal(t->ncontainers, 0);
		kepler_kube_names_free(t);
	}
	/* items of the wrong shape are skipped, not fatal */
	{
		const char *json =
			"{\"items\": [1, \"x\", null, {\"metadata\": 5}, {\"metadata\": {\"name\": "
			"\"a\", \"namespace\": \"b\", \"uid\": \"" UID_SHOP "\"}, \"status\": "
			"{\"containerStatuses\": [7, {\"name\": \"c\", \"containerID\": \"containerd://" HEX(
				"a") "\"}]}}]}";
		struct kepler_kube_names *t = kepler_kube_names_new();
		struct kepler_error err = { 0 };

		KEPLER_OK(kepler_kube_names_parse_podlist(t, json, strlen(json), &err));
		assert_int_equal(t->ncontainers, 1);
		assert_int_equal(t->skipped, 5);
		expect(t, HEX("a"), "c", "a", "b", 0);
		kepler_kube_names_free(t);
	}
}

/* The process's peak resident memory (VmHWM), in KiB. */
static long peak_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			v = atol(line + 6);
	fclose(f);
	return v;
}

/*
 * 32 MiB answers (the most the client takes) of the shapes that cost
 * json-c the most: {} (8.5 GiB as a tree), [] (1.6 GiB), 1 (1.2 GiB) and a
 * string-heavy one are refused before a tree is built, naming what they
 * would take; the test's peak memory grows by less than the parse budget.
 * A real kubelet's PodList (the fixture, 110 pods' worth) still parses.
 */
static void test_podlist_memory_bounded(void **state)
{
	static const char *const units[] = { "{},", "[],", "1,", "\"a\":{\"b\":[\"c\"]}," };
	size_t size = KEPLER_KUBE_MAX_BODY;
	char *json = malloc(size + 64);
	long before;

	(void)state;
	assert_non_null(json);
	before = peak_kib();
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		struct kepler_kube_names *t = kepler_kube_names_new();
		struct kepler_error err = { 0 };
		size_t len = 0, ul = strlen(units[u]);
		bool obj = u == 3;

		len += (size_t)snprintf(json, 64, obj ? "{\"items\":[{" : "{\"items\":[");
		while (len + ul + 8 < size) {
			memcpy(json + len, units[u], ul);
			len += ul;
		}
		len += (size_t)snprintf(json + len, 64, obj ? "\"z\":0}]}" : "1]}");
		assert_int_equal(kepler_kube_names_parse_podlist(t, json, len, &err), -E2BIG);
		assert_non_null(strstr(err.msg, "more than the 112 MiB allowed"));
		print_message("%s x %zu: %s\n", units[u], len / ul, err.msg);
		kepler_kube_names_free(t);
	}
	free(json);
	print_message("peak memory grew by %ld KiB over 4 answers of 32 MiB\n", peak_kib() - before);
	assert_true(peak_kib() - before < (long)(KEPLER_KUBE_PARSE_BUDGET >> 10));
}

static void test_log_links(void **state)
{
	struct kepler_kube_names *t = kepler_kube_names_new();

	(void)state;
	assert_int_equal(kepler_kube_names_add_log_link(t, "web-7d4b9c8f6-x2x9k_shop_nginx-" HEX("2") ".log",
							"/var/log/pods/shop_web-7d4b9c8f6-x2x9k_" UID_SHOP
							"/nginx/0.log"),
			 1);
	assert_int_equal(kepler_kube_names_add_log_link(
				 t, "web-7d4b9c8f6-x2x9k_shop_log-shipper-" HEX("3") ".log",
				 "/var/log/pods/shop_web-7d4b9c8f6-x2x9k_" UID_SHOP "/log-shipper/2.log"),
			 1);
	/* the same pod name in another namespace; a relative target */
	assert_int_equal(kepler_kube_names_add_log_link(t,
							"web-7d4b9c8f6-x2x9k_staging_nginx-" HEX("5") ".log",
							"../pods/staging_web-7d4b9c8f6-x2x9k_9f8e7d6c-5b4a-"
							"4392-8170-6f5e4d3c2b1a/nginx/0.log"),
			 1);
	/* a target that names another pod: the container is named, its pod's UID unknown */
	assert_int_equal(kepler_kube_names_add_log_link(t, "db-0_data_postgres-" HEX("6") ".log",
							"/var/log/pods/other_db-0_" UID_SHOP
							"/postgres/0.log"),
			 1);
	assert_int_equal(kepler_kube_names_add_log_link(t, ".", ""), 0);
	assert_int_equal(kepler_kube_names_add_log_link(t, "README", ""), 0);
	assert_int_equal(t->skipped, 0);
	/* broken rules: counted */
	assert_int_equal(kepler_kube_names_add_log_link(t, "a_b_c-" HEX("g") ".log", ""), 0);
	assert_int_equal(kepler_kube_names_add_log_link(t, "a_b-" HEX("1") ".log", ""), 0);
	assert_int_equal(kepler_kube_names_add_log_link(t, "a_b_c_d-" HEX("1") ".log", ""), 0);
	assert_int_equal(kepler_kube_names_add_log_link(t, "A_b_c-" HEX("1") ".log", ""), 0);
	assert_int_equal(kepler_kube_names_add_log_link(t, "a_b_c" HEX("1") ".log", ""), 0);
	assert_int_equal(kepler_kube_names_add_log_link(t, "x.log", ""), 0);
	assert_int_equal(t->skipped, 6);
	kepler_kube_names_sort(t);
	assert_int_equal(t->ncontainers, 4);
	expect(t, HEX("2"), "nginx", "web-7d4b9c8f6-x2x9k", "shop", 0);
	expect(t, HEX("3"), "log-shipper", "web-7d4b9c8f6-x2x9k", "shop", 0);
	expect(t, HEX("5"), "nginx", "web-7d4b9c8f6-x2x9k", "staging", 0);
	expect(t, HEX("6"), "postgres", "db-0", "data", 0);
	assert_string_equal(kepler_kube_names_pod(t, UID_SHOP)->name, "web-7d4b9c8f6-x2x9k");
	assert_int_equal(t->npods, 3); /* shop's pod once, staging's, db-0 with no UID */
	kepler_kube_names_free(t);
}

static void test_cpu_quantities(void **state)
{
	static const struct {
		const char *s;
		bool ok;
		uint32_t m;
	} rows[] = {
		{ "250m", true, 250 },   { "1", true, 1000 },
		{ "0.5", true, 500 },    { "1.25", true, 1250 },
		{ "2000m", true, 2000 }, { "0.0001", true, 0 },
		{ ".5", true, 500 },     { "", false, 0 },
		{ "m", false, 0 },       { "1.5m", false, 0 },
		{ "1k", false, 0 },      { "1e3", false, 0 },
		{ "-1", false, 0 },      { "99999999999", false, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint32_t m = 12345;
		bool ok = kepler_kube_parse_cpu(rows[i].s, strlen(rows[i].s), &m);

		if (ok != rows[i].ok || (ok && m != rows[i].m))
			fail_msg("'%s': got %d %u", rows[i].s, ok, m);
	}
}

/* The thread on a log directory: a table is published; a new link shows up after a poll. */
static void test_thread_logs(void **state)
{
	char dir[] = "/tmp/kepler-kube-XXXXXX", sub[128], link[256];
	struct kepler_kube_params p = { .source = KEPLER_KUBE_LOGS, .poll_ns = 1000000000ULL };
	struct kepler_error err = { 0 };
	const struct kepler_kube_pod *pod = NULL;
	struct kepler_kube *k;
	uint64_t good = 0, failed = 0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/containers", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(link, sizeof(link), "%s/web-1_shop_nginx-" HEX("2") ".log", sub);
	assert_int_equal(symlink("/var/log/pods/shop_web-1_" UID_SHOP "/nginx/0.log", link), 0);
	p.log_dir = dir;
	KEPLER_OK(kepler_kube_open(&p, &k, &err));
	kepler_kube_refresh(k); /* starts the thread */
	for (int i = 0; i < 200 && !good; i++) {
		usleep(10000);
		kepler_kube_counts(k, &good, &failed);
	}
	kepler_kube_refresh(k);
	assert_non_null(kepler_kube_container(k, HEX("2"), UID_SHOP, &pod));
	assert_string_equal(pod->name, "web-1");
	assert_null(kepler_kube_container(k, HEX("3"), UID_SHOP, &pod)); /* asks for an early poll */
	snprintf(link, sizeof(link), "%s/web-1_shop_sidecar-" HEX("3") ".log", sub);
	assert_int_equal(symlink("/var/log/pods/shop_web-1_" UID_SHOP "/sidecar/0.log", link), 0);
	for (int i = 0; i < 500 && !kepler_kube_container(k, HEX("3"), "", &pod); i++) {
		usleep(10000);
		kepler_kube_refresh(k);
	}
	assert_non_null(kepler_kube_container(k, HEX("3"), "", &pod));
	kepler_kube_close(k);
	unlink(link);
	snprintf(link, sizeof(link), "%s/web-1_shop_nginx-" HEX("2") ".log", sub);
	unlink(link);
	rmdir(sub);
	rmdir(dir);
}

/* A kubelet that is not there: polls fail, the loop never waits, close is prompt. */
static void test_thread_kubelet_down(void **state)
{
	char token[] = "/tmp/kepler-kube-token-XXXXXX";
	int fd = mkstemp(token);
	struct kepler_kube_params p = { .source = KEPLER_KUBE_KUBELET,
					.kubelet_url = "https://127.0.0.1:1",
					.token_file = token,
					.poll_ns = 1000000000ULL };
	struct kepler_error err = { 0 };
	struct kepler_kube *k;
	uint64_t good = 0, failed = 0;
	struct timespec t0, t1;
	const struct kepler_kube_pod *pod;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc\n", 4), 4);
	close(fd);
	KEPLER_OK(kepler_kube_open(&p, &k, &err));
	kepler_kube_refresh(k); /* starts the thread */
	for (int i = 0; i < 300 && !failed; i++) {
		usleep(10000);
		kepler_kube_counts(k, &good, &failed);
	}
	assert_int_equal(good, 0);
	assert_true(failed >= 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kepler_kube_refresh(k);
	assert_null(kepler_kube_container(k, HEX("2"), UID_SHOP, &pod));
	kepler_kube_close(k);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 3);
	unlink(token);
	/* not a URL */
	p.kubelet_url = "10.0.0.1:10250";
	assert_int_equal(kepler_kube_open(&p, &k, &err), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_podlist),         cmocka_unit_test(test_owners_and_labels),
		cmocka_unit_test(test_podlist_garbage), cmocka_unit_test(test_podlist_memory_bounded),
		cmocka_unit_test(test_log_links),       cmocka_unit_test(test_cpu_quantities),
		cmocka_unit_test(test_thread_logs),     cmocka_unit_test(test_thread_kubelet_down),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
