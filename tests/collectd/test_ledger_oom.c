// SPDX-License-Identifier: Apache-2.0
/*
 * The ledger out of memory. Linked with --wrap for malloc, calloc, realloc
 * and strdup, so that the Nth allocation can be made to fail. For every
 * interval of a scenario with churn (processes ending and starting,
 * containers, pods, VMs, terminated workloads carried) and for every N
 * along that interval's build: the build either succeeds or fails with
 * -ENOMEM, and after a failure the same build retried gives exactly the
 * snapshot a ledger that never failed gave, and so do the intervals after
 * it (nothing lost, no counter back). Leaks are LeakSanitizer's to find.
 * Also resume: a failed resume resumes nothing and leaks nothing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "ledger.h"
#include "snapshot_checks.h"

#define SEC 1000000000ULL
#define INTERVALS 5
#define NPROC 16

/* ---- failing allocations ---- */

static long countdown; /* > 0: the countdown-th allocation from now fails */
static long allocs;    /* allocations seen while counting */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);

static int fail_now(void)
{
	allocs++;
	return countdown > 0 && --countdown == 0;
}

void *__wrap_malloc(size_t n)
{
	return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fail_now() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	return fail_now() ? NULL : __real_strdup(s);
}

/* ---- the scenario ---- */

struct world {
	struct kepler_ledger_proc procs[NPROC];
	char comm[NPROC][16], cid[NPROC][65], pod[NPROC][40], vm[NPROC][16];
};

/* Interval @k's processes: a window of pids that moves, so some end and some start. */
static size_t world_at(struct world *w, int k)
{
	size_t n = 0;

	memset(w, 0, sizeof(*w));
	for (int pid = 100 + 3 * k; pid < 100 + 3 * k + 12 && n < NPROC; pid++, n++) {
		struct kepler_ledger_proc *p = &w->procs[n];

		snprintf(w->comm[n], sizeof(w->comm[n]), "proc-%d", pid);
		*p = (struct kepler_ledger_proc){
			.pid = (uint32_t)pid,
			.start_time_ns = 1000 + (uint64_t)pid,
			.comm = w->comm[n],
			.exe = "/usr/bin/x",
			.container_id = "",
			.container_runtime = "",
			.pod_uid = "",
			.vm_id = "",
			.vm_name = "",
			.vm_hypervisor = "",
			.cpu_time_delta_ns = (uint64_t)(pid % 5 + 1) * 10000000ULL,
			.cpu_time_ns = (uint64_t)(k + 1) * 50000000ULL,
			.cycles = KEPLER_COUNTER_UNAVAILABLE,
			.instructions = KEPLER_COUNTER_UNAVAILABLE,
			.cache_misses = KEPLER_COUNTER_UNAVAILABLE,
		};
		/* the oldest three of the window end in this interval */
		p->state = pid < 100 + 3 * k + 3 && k > 0 ? KEPLER_STATE_TERMINATED : KEPLER_STATE_RUNNING;
		if (pid % 3 == 0) {
			for (int c = 0; c < 64; c++)
				w->cid[n][c] = "0123456789abcdef"[(pid / 6 + c) % 16];
			p->container_id = w->cid[n];
			p->container_runtime = "containerd";
			p->type = KEPLER_PROC_CONTAINER;
			if (pid % 2 == 0) {
				snprintf(w->pod[n], sizeof(w->pod[n]), "8d6f1b0e-3c2a-4e57-9a1d-%012d",
					 pid / 12);
				p->pod_uid = w->pod[n];
			}
		} else if (pid % 7 == 0) {
			snprintf(w->vm[n], sizeof(w->vm[n]), "vm-%d", pid / 14);
			p->vm_id = p->vm_name = w->vm[n];
			p->vm_hypervisor = "kvm";
		}
	}
	return n;
}

static struct kepler_ledger_input input(struct world *w, int k)
{
	static const char *const names[] = { "package", "dram" };
	struct kepler_ledger_input in = {
		.wall_ns = 1800000000 * SEC + (uint64_t)k * 5 * SEC,
		.mono_ns = (uint64_t)k * 5 * SEC,
		.interval_ns = 5 * SEC,
		.first = k == 0,
		.nzones = 2,
		.busy_delta_ns = 4 * SEC,
		.total_delta_ns = 10 * SEC,
		.usage_ratio = 0.4,
		.cpu_count = 2,
		.procs = w->procs,
	};

	in.nprocs = world_at(w, k);
	for (unsigned z = 0; z < 2; z++)
		in.zones[z] = (struct kepler_ledger_zone_in){ .name = names[z],
							      .path = "p",
							      .source = KEPLER_SOURCE_RAPL,
							      .delta_uj = 1000003ULL * (z + 1) *
									  (uint64_t)(k + 1) };
	return in;
}

static const struct kepler_ledger_params params = {
	.terminated_ttl_ns = 12 * SEC,
	.max_terminated = 4,
	.min_terminated_energy_uj = 0,
};

struct blob {
	void *data;
	size_t len;
};

static struct blob encode(const struct kepler_snapshot *s)
{
	struct blob b;

	assert_int_equal(kepler_snapshot_encode(s, &b.data, &b.len, NULL), 0);
	return b;
}

/* Build interval @k into @l; the snapshot must be @want's. */
static void build_expect(struct kepler_ledger *l, int k, const struct blob *want)
{
	static struct world w;
	struct kepler_ledger_input in = input(&w, k);
	struct kepler_snapshot *s;
	struct kepler_error err;
	struct blob got;
	const char *why;

	if (kepler_ledger_build(l, &in, &s, &err) < 0)
		fail_msg("interval %d: %s", k, err.msg);
	if ((why = snapshot_sums(s)))
		fail_msg("interval %d: %s", k, why);
	got = encode(s);
	if (got.len != want->len || memcmp(got.data, want->data, got.len))
		fail_msg("interval %d: the snapshot differs from the one of a ledger that never failed", k);
	free(got.data);
}

static void test_every_allocation_of_every_interval(void **state)
{
	static struct world w;
	struct blob ref[INTERVALS];
	struct kepler_ledger *l;
	struct kepler_snapshot *s;
	struct kepler_error err;
	long failures = 0;

	(void)state;
	KEPLER_OK(kepler_ledger_new(&params, &l, &err));
	for (int k = 0; k < INTERVALS; k++) {
		struct kepler_ledger_input in = input(&w, k);

		KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
		ref[k] = encode(s);
	}
	assert_true(s->ncontainers > 0 && s->npods > 0 && s->nvms > 0);
	kepler_ledger_free(l);
	for (int f = 0; f < INTERVALS; f++) {
		for (long n = 1;; n++) {
			struct kepler_ledger_input in;
			int r;

			KEPLER_OK(kepler_ledger_new(&params, &l, &err));
			for (int k = 0; k < f; k++)
				build_expect(l, k, &ref[k]);
			in = input(&w, f);
			countdown = n;
			allocs = 0;
			r = kepler_ledger_build(l, &in, &s, &err);
			countdown = 0;
			if (r == 0 && allocs < n) { /* every allocation of the build has failed once */
				kepler_ledger_free(l);
				print_message("interval %d: %ld allocations, each failed in turn\n", f,
					      n - 1);
				break;
			}
			if (r != 0 && r != -ENOMEM)
				fail_msg("interval %d, allocation %ld failed: %d (%s)", f, n, r, err.msg);
			failures += r != 0;
			if (r == 0) { /* the failed allocation was not the build's (none is optional) */
				fail_msg("interval %d: allocation %ld failed and the build succeeded", f, n);
			}
			for (int k = f; k < INTERVALS; k++) /* the retry, then the rest */
				build_expect(l, k, &ref[k]);
			kepler_ledger_free(l);
		}
	}
	print_message("%ld failed builds, each retried to the same snapshots\n", failures);
	for (int k = 0; k < INTERVALS; k++)
		free(ref[k].data);
}

static void test_resume_out_of_memory(void **state)
{
	static struct world w;
	struct kepler_ledger *l, *l2;
	struct kepler_snapshot *s, *prev;
	struct kepler_error err;
	struct blob b;
	long n;

	(void)state;
	KEPLER_OK(kepler_ledger_new(&params, &l, &err));
	for (int k = 0; k < 3; k++) {
		struct kepler_ledger_input in = input(&w, k);

		KEPLER_OK(kepler_ledger_build(l, &in, &s, &err));
	}
	b = encode(s);
	KEPLER_OK(kepler_snapshot_decode(b.data, b.len, &prev, &err));
	kepler_ledger_free(l);
	for (n = 1;; n++) {
		struct kepler_ledger_input in = input(&w, 3);
		int r;

		in.first = true; /* a restarted collector's first interval */
		KEPLER_OK(kepler_ledger_new(&params, &l2, &err));
		countdown = n;
		allocs = 0;
		r = kepler_ledger_resume(l2, prev, NULL, NULL);
		countdown = 0;
		if (r == 0 && allocs < n) {
			kepler_ledger_free(l2);
			break;
		}
		assert_int_equal(r, -ENOMEM);
		/* nothing resumed: the node starts from this interval's energy */
		KEPLER_OK(kepler_ledger_build(l2, &in, &s, &err));
		assert_int_equal(s->zones[0].energy.total_uj, 0); /* no delta in a first interval */
		assert_null(snapshot_sums(s));
		kepler_ledger_free(l2);
	}
	print_message("resume: %ld allocations, each failed in turn\n", n - 1);
	kepler_snapshot_free(prev);
	free(b.data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_allocation_of_every_interval),
		cmocka_unit_test(test_resume_out_of_memory),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
