// SPDX-License-Identifier: Apache-2.0
/*
 * The history ledger (kepler/history.h): identities and their grouping,
 * cumulative energy and CO2e exact to the µJ and the mg, the tier record's
 * round trip and its decoder against damage, the carbon intensity file.
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

#include <xxhash.h>

#include "kepler/carbon.h"
#include "kepler/history.h"
#include "kepler_test.h"

#define NZ 2
#define NP 4

/* A snapshot of 2 zones, 4 processes (two of one group), a container in a pod of namespace shop, a VM. */
struct fixture {
	struct kepler_snapshot s;
	struct kepler_process p[NP];
	struct kepler_container c;
	struct kepler_pod pod;
	struct kepler_vm vm;
	struct kepler_energy e[NP + 3][NZ];
};

static void make(struct fixture *f, uint64_t seq, uint64_t wall_s, uint64_t uj)
{
	static const char *const comm[NP] = { "nginx", "nginx", "bash", "qemu" };
	static const char *const exe[NP] = { "/usr/sbin/nginx", "/usr/sbin/nginx", "/bin/bash",
					     "/usr/bin/qemu" };

	memset(f, 0, sizeof(*f));
	f->s.seq = seq;
	f->s.wall_ns = wall_s * 1000000000ULL;
	f->s.nzones = NZ;
	f->s.zones[0].name = "package";
	f->s.zones[1].name = "dram";
	f->s.zones[0].energy.delta_uj = 10 * uj;
	f->s.zones[1].energy.delta_uj = 2 * uj;
	f->s.node_cpu_busy_delta_ns = 1000;
	for (int i = 0; i < NP + 3; i++)
		for (int z = 0; z < NZ; z++)
			f->e[i][z].delta_uj = uj * (uint64_t)(z ? 1 : 2);
	for (int i = 0; i < NP; i++) {
		f->p[i] = (struct kepler_process){ .pid = (uint32_t)(100 + i),
						   .comm = comm[i],
						   .exe = exe[i],
						   .container_id = i < 2 ? "c1" : "",
						   .vm_id = i == 3 ? "vm1" : "" };
		f->p[i].usage.zones = f->e[i];
		f->p[i].usage.cpu_time_delta_ns = 10;
	}
	f->c = (struct kepler_container){
		.id = "c1", .name = "web", .runtime = "containerd", .pod_id = "u1"
	};
	f->c.usage.zones = f->e[NP];
	f->pod = (struct kepler_pod){ .id = "u1", .name = "web-1", .ns = "shop" };
	f->pod.usage.zones = f->e[NP + 1];
	f->vm = (struct kepler_vm){ .id = "vm1", .name = "guest", .hypervisor = "kvm" };
	f->vm.usage.zones = f->e[NP + 2];
	f->s.processes = f->p, f->s.nprocesses = NP;
	f->s.containers = &f->c, f->s.ncontainers = 1;
	f->s.pods = &f->pod, f->s.npods = 1;
	f->s.vms = &f->vm, f->s.nvms = 1;
}

static const struct kepler_history_row *find(const struct kepler_history *h, enum kepler_history_kind k,
					     const char *id, const char *name, const char *exe)
{
	struct kepler_history_row like = {
		.kind = k,
		.id = (char *)id,
		.name = (char *)name,
		.ns = "",
		.pod_id = "",
		.runtime = "",
		.exe = (char *)exe,
		.container_id = k == KEPLER_HISTORY_PROCESS && !strcmp(name, "nginx") ? "c1" : "",
		.vm_id = k == KEPLER_HISTORY_PROCESS && !strcmp(name, "qemu") ? "vm1" : ""
	};

	return kepler_history_find(h, &like);
}

static void test_identities_and_sums(void **state)
{
	struct kepler_history *h = kepler_history_new();
	struct fixture f;
	const struct kepler_history_row *r;

	(void)state;
	for (uint64_t i = 1; i <= 3; i++) {
		make(&f, i, 100 + i, 1000);
		assert_int_equal(kepler_history_add(h, &f.s, 0), 0);
	}
	/* node, namespace, pod, container, vm, and 3 process groups (the two nginx are one) */
	assert_int_equal(kepler_history_count(h), 8);
	r = find(h, KEPLER_HISTORY_PROCESS, "", "nginx", "/usr/sbin/nginx");
	assert_non_null(r);
	assert_int_equal(r->energy_uj[0], 3 * 2 * 2000);
	assert_int_equal(r->cpu_time_ns, 60);
	assert_int_equal(r->first_ns, 101000000000ULL);
	assert_int_equal(r->last_ns, 103000000000ULL);
	r = find(h, KEPLER_HISTORY_NAMESPACE, "", "shop", "");
	assert_non_null(r);
	assert_int_equal(r->energy_uj[1], 3000);
	r = find(h, KEPLER_HISTORY_CONTAINER, "c1", "", "");
	assert_non_null(r);
	assert_string_equal(r->ns, "shop");
	assert_string_equal(r->pod_id, "u1");
	r = find(h, KEPLER_HISTORY_NODE, "", "", "");
	assert_int_equal(r->energy_uj[0], 30000);
	/* no intensity: no CO2e */
	assert_int_equal(r->co2e_mg[0], 0);
	/* older than the last: refused */
	make(&f, 2, 200, 1);
	assert_int_equal(kepler_history_add(h, &f.s, 0), -EINVAL);
	kepler_history_free(h);
}

/* Process @i of the memo test: its strings (from a few of each; some comms alike but for their last bytes). */
static void memo_names(size_t i, char comm[32], const char **exe, const char **cid)
{
	static const char *const exes[] = { "/bin/sh", "/usr/bin/python3", "/usr/sbin/nginx", "" };
	static const char *const cids[] = { "", "c1", "c2" };
	static const char *const comms[] = { "worker-", "abcdefghijklmn", "abcdefghijklmno",
					     "abcdefghijklmnop" };

	snprintf(comm, 32, "%s%zu", comms[i % 4], i % 4 ? i % 3 : i % 61);
	*exe = exes[i / 4 % 4];
	*cid = cids[i / 16 % 3];
}

/*
 * Processes that share their strings' addresses (as the collector's and a
 * decoded snapshot's do) land in the rows that copies of every string do:
 * comms alike but for a byte, of 15, 16 and 17 bytes, more processes than
 * the ledger's memo has entries.
 */
static void test_shared_strings_same_rows(void **state)
{
	enum { N = 3000 };
	struct kepler_history *shared = kepler_history_new(), *apart = kepler_history_new();
	struct kepler_process *p = calloc(N, sizeof(*p)), *q = calloc(N, sizeof(*q));
	struct kepler_energy *e = calloc(N, sizeof(*e));
	char(*comm)[32] = calloc(N, 32);
	char **copies = calloc(3 * N, sizeof(char *));
	struct kepler_snapshot s = { .nzones = 1 };

	(void)state;
	assert_true(shared && apart && p && q && e && comm && copies);
	s.zones[0].name = "package";
	for (size_t i = 0; i < N; i++) {
		const char *exe, *cid;

		memo_names(i, comm[i], &exe, &cid);
		e[i].delta_uj = i + 1;
		p[i] = (struct kepler_process){ .pid = (uint32_t)i + 1,
						.comm = comm[i], /* its own, as the collector's */
						.exe = exe,
						.container_id = cid,
						.vm_id = "" };
		p[i].usage.zones = &e[i];
		p[i].usage.cpu_time_delta_ns = 1;
		q[i] = p[i];
		q[i].comm = copies[3 * i] = strdup(p[i].comm);
		q[i].exe = copies[3 * i + 1] = strdup(exe);
		q[i].container_id = copies[3 * i + 2] = strdup(cid);
	}
	for (uint64_t seq = 1; seq <= 2; seq++) {
		s.seq = seq;
		s.wall_ns = seq * 1000000000ULL;
		s.processes = p, s.nprocesses = N;
		assert_int_equal(kepler_history_add(shared, &s, 420000), 0);
		s.processes = q;
		assert_int_equal(kepler_history_add(apart, &s, 420000), 0);
	}
	assert_int_equal(kepler_history_count(shared), kepler_history_count(apart));
	for (size_t i = 0; i < kepler_history_count(shared); i++) {
		const struct kepler_history_row *a = kepler_history_row(shared, i),
						*b = kepler_history_find(apart, a);

		assert_non_null(b);
		assert_int_equal(a->energy_uj[0], b->energy_uj[0]);
		assert_int_equal(a->co2e_mg[0], b->co2e_mg[0]);
		assert_int_equal(a->co2e_rem[0], b->co2e_rem[0]);
		assert_int_equal(a->cpu_time_ns, b->cpu_time_ns);
		assert_int_equal(a->first_ns, b->first_ns);
		assert_int_equal(a->last_ns, b->last_ns);
	}
	/* the rows themselves: every process of one name, and no other, in its row */
	{
		uint64_t sum = 0;
		const struct kepler_history_row like = { .kind = KEPLER_HISTORY_PROCESS,
							 .name = "abcdefghijklmn1",
							 .exe = "/bin/sh",
							 .container_id = "",
							 .vm_id = "" },
						*r = kepler_history_find(shared, &like);

		for (size_t i = 0; i < N; i++)
			if (!strcmp(p[i].comm, like.name) && !strcmp(p[i].exe, like.exe) &&
			    !*p[i].container_id)
				sum += 2 * (i + 1);
		assert_true(sum > 0);
		assert_non_null(r);
		assert_int_equal(r->energy_uj[0], sum);
		/* summed per run of processes, then multiplied: the same as each alone, remainders carried */
		assert_int_equal(r->co2e_mg[0],
				 (uint64_t)((unsigned __int128)sum * 420000 / KEPLER_UJ_PER_KWH));
		assert_int_equal(r->co2e_rem[0],
				 (uint64_t)((unsigned __int128)sum * 420000 % KEPLER_UJ_PER_KWH));
	}
	for (size_t i = 0; i < 3 * N; i++)
		free(copies[i]);
	free(copies);
	free(comm);
	free(e);
	free(q);
	free(p);
	kepler_history_free(apart);
	kepler_history_free(shared);
}

/*
 * Processes of one program one after another (runs of 1 to 9, three
 * programs, two zones, with idle shares) are summed and added to their row
 * once per run: each row's energy and CO2e are those of adding every
 * process alone, to the µJ and the remainder.
 */
static void test_runs_exact(void **state)
{
	enum { N = 2000, NPROG = 3 };
	static const char *const comms[NPROG] = { "alpha", "beta", "gamma" };
	struct kepler_history *h = kepler_history_new();
	struct kepler_process *p = calloc(N, sizeof(*p));
	struct kepler_energy *e = calloc(4 * N, sizeof(*e));
	struct kepler_snapshot s = { .nzones = 2, .seq = 1, .wall_ns = 1000000000ULL };
	uint64_t uj[NPROG][2] = { { 0 } }, cpu[NPROG] = { 0 };
	const uint32_t mg = 333337;
	size_t i = 0;

	(void)state;
	assert_true(h && p && e);
	s.zones[0].name = "package";
	s.zones[1].name = "dram";
	for (size_t run = 0; i < N; run++) {
		size_t prog = run % NPROG, len = 1 + run * 7 % 9;

		for (size_t k = 0; k < len && i < N; k++, i++) {
			struct kepler_energy *z = &e[4 * i];

			z[0].delta_uj = i * 7919 % 100003;
			z[1].delta_uj = i * 104729 % 1009;
			z[2].delta_uj = i % 17; /* idle */
			z[3].delta_uj = i % 5;
			p[i] = (struct kepler_process){ .pid = (uint32_t)i + 1,
							.comm = comms[prog],
							.exe = "/usr/bin/prog",
							.container_id = "",
							.vm_id = "" };
			p[i].usage.zones = z;
			p[i].usage.idle = z + 2;
			p[i].usage.cpu_time_delta_ns = i;
			uj[prog][0] += z[0].delta_uj + z[2].delta_uj;
			uj[prog][1] += z[1].delta_uj + z[3].delta_uj;
			cpu[prog] += i;
		}
	}
	s.processes = p;
	s.nprocesses = N;
	assert_int_equal(kepler_history_add(h, &s, mg), 0);
	for (size_t k = 0; k < NPROG; k++) {
		const struct kepler_history_row like = { .kind = KEPLER_HISTORY_PROCESS,
							 .name = (char *)comms[k],
							 .exe = "/usr/bin/prog",
							 .container_id = "",
							 .vm_id = "" },
						*r = kepler_history_find(h, &like);

		assert_non_null(r);
		assert_int_equal(r->cpu_time_ns, cpu[k]);
		for (size_t z = 0; z < 2; z++) {
			unsigned __int128 x = (unsigned __int128)uj[k][z] * mg;

			assert_int_equal(r->energy_uj[z], uj[k][z]);
			assert_int_equal(r->co2e_mg[z], (uint64_t)(x / KEPLER_UJ_PER_KWH));
			assert_int_equal(r->co2e_rem[z], (uint64_t)(x % KEPLER_UJ_PER_KWH));
		}
	}
	free(e);
	free(p);
	kepler_history_free(h);
}

/* CO2e is the exact sum of each interval's energy × intensity, floored once: remainders carried. */
static void test_co2e_exact(void **state)
{
	struct kepler_history *h = kepler_history_new();
	struct fixture f;
	unsigned __int128 exact = 0;
	const struct kepler_history_row *r;

	(void)state;
	for (uint64_t i = 1; i <= 1000; i++) {
		uint32_t mg = i < 500 ? 123456 : 654321; /* 123.456 g/kWh, then 654.321 */
		uint64_t uj = 3333333 + i * 7;

		make(&f, i, 1000 + i, uj);
		assert_int_equal(kepler_history_add(h, &f.s, mg), 0);
		exact += (unsigned __int128)(10 * uj) * mg;
	}
	r = find(h, KEPLER_HISTORY_NODE, "", "", "");
	assert_int_equal(r->co2e_mg[0], (uint64_t)(exact / KEPLER_UJ_PER_KWH));
	assert_int_equal(r->co2e_rem[0], (uint64_t)(exact % KEPLER_UJ_PER_KWH));
	print_message("1000 intervals at two intensities: %llu mg of CO2e, exact\n",
		      (unsigned long long)r->co2e_mg[0]);
	kepler_history_free(h);
}

/*
 * A window's CO2e is the exact difference rounded once: 0.6 mg at the start
 * and 1.5 mg at the end is 0.9 mg, so 0 whole mg (the rounded counters'
 * difference would say 1); a counter begun anew counts from 0.
 */
static void test_window(void **state)
{
	const uint64_t k = KEPLER_UJ_PER_KWH;
	uint64_t e0 = 1000, m0 = 0, r0 = 6 * k / 10, e1 = 5000, m1 = 1, r1 = 5 * k / 10;
	struct kepler_history_row a = { .energy_uj = &e0, .co2e_mg = &m0, .co2e_rem = &r0 },
				  b = { .energy_uj = &e1, .co2e_mg = &m1, .co2e_rem = &r1 };
	struct kepler_history_span w;

	(void)state;
	w = kepler_history_window(&a, 0, &b, 0);
	assert_int_equal(w.energy_uj, 4000);
	assert_int_equal(w.co2e_mg, 0);
	assert_int_equal(w.co2e_rem, 9 * k / 10);
	w = kepler_history_window(NULL, 0, &b, 0); /* began inside the window */
	assert_int_equal(w.energy_uj, 5000);
	assert_int_equal(w.co2e_mg, 1);
	e0 = 6000; /* above the end: begun anew */
	w = kepler_history_window(&a, 0, &b, 0);
	assert_int_equal(w.energy_uj, 5000);
	assert_int_equal(w.co2e_mg, 1);
	assert_int_equal(w.co2e_rem, 5 * k / 10);
}

static void test_record_round_trip_and_damage(void **state)
{
	struct kepler_history *h = kepler_history_new(), *back = NULL;
	struct kepler_history_header hdr = { .period_s = 3600,
					     .boundary_ns = 7200000000000ULL,
					     .flags = KEPLER_HISTORY_MISSED },
				     got;
	struct kepler_error err = { 0 };
	struct fixture f;
	size_t len, rejected = 0;
	void *blob;
	unsigned char *b;

	(void)state;
	for (uint64_t i = 1; i <= 3; i++) {
		make(&f, i, 100 + i, 1000);
		f.pod.owner_kind = "Deployment", f.pod.owner_name = "web", f.pod.labels = "team=shop,tier=";
		assert_int_equal(kepler_history_add(h, &f.s, 400000), 0);
	}
	assert_int_equal(kepler_history_encode(h, &hdr, 0, &blob, &len, &err), 0);
	assert_int_equal(kepler_history_decode(blob, len, &back, &got, &err), 0);
	assert_int_equal(got.period_s, 3600);
	assert_int_equal(got.boundary_ns, hdr.boundary_ns);
	assert_int_equal(got.flags, KEPLER_HISTORY_MISSED);
	assert_int_equal(kepler_history_seq(back), 3);
	assert_int_equal(kepler_history_intensity(back), 400000);
	assert_int_equal(kepler_history_count(back), kepler_history_count(h));
	for (size_t i = 0; i < kepler_history_count(h); i++) {
		const struct kepler_history_row *a = kepler_history_row(h, i),
						*c = kepler_history_find(back, a);

		assert_non_null(c);
		assert_memory_equal(a->energy_uj, c->energy_uj, NZ * sizeof(uint64_t));
		assert_memory_equal(a->co2e_mg, c->co2e_mg, NZ * sizeof(uint64_t));
		assert_memory_equal(a->co2e_rem, c->co2e_rem, NZ * sizeof(uint64_t));
		assert_string_equal(a->ns, c->ns);
		assert_string_equal(a->owner_kind, c->owner_kind);
		assert_string_equal(a->owner_name, c->owner_name);
		assert_string_equal(a->labels, c->labels);
		if (a->kind == KEPLER_HISTORY_POD) {
			assert_string_equal(c->owner_kind, "Deployment");
			assert_string_equal(c->owner_name, "web");
			assert_string_equal(c->labels, "team=shop,tier=");
		}
	}
	kepler_history_free(back);
	/* every truncation and every flipped byte is refused with a message, never a crash */
	b = blob;
	for (size_t cut = 0; cut < len; cut++) {
		assert_true(kepler_history_decode(blob, cut, &back, &got, &err) < 0);
		rejected++;
	}
	for (size_t i = 0; i < len; i++) { /* the checksum covers the header too (format 1.1) */
		b[i] ^= 0x5a;
		assert_true(kepler_history_decode(blob, len, &back, &got, &err) < 0);
		rejected++;
		b[i] ^= 0x5a;
	}
	print_message("a record of %zu bytes: %zu damaged copies refused (last: %s)\n", len, rejected,
		      err.msg);
	/* 0xff over the flags: refused, not read as "the collector was down" */
	memset(b + 8, 0xff, 4);
	assert_true(kepler_history_decode(blob, len, &back, &got, &err) < 0);
	assert_string_equal(err.msg, "tier record: checksum mismatch");
	memset(b + 8, 0, 4);
	b[8] = KEPLER_HISTORY_MISSED;
	/* a newer major format names both versions */
	b[4] = 9;
	assert_int_equal(kepler_history_decode(blob, len, &back, &got, &err), -EPROTONOSUPPORT);
	free(blob);
	/* rows last seen before the tier's retention are left out */
	assert_int_equal(kepler_history_encode(h, &hdr, 103000000000ULL, &blob, &len, &err), 0);
	assert_int_equal(kepler_history_decode(blob, len, &back, &got, &err), 0);
	assert_int_equal(kepler_history_count(back), kepler_history_count(h));
	kepler_history_free(back);
	free(blob);
	assert_int_equal(kepler_history_encode(h, &hdr, 104000000000ULL, &blob, &len, &err), 0);
	assert_int_equal(kepler_history_decode(blob, len, &back, &got, &err), 0);
	assert_int_equal(kepler_history_count(back), 1); /* the node only */
	kepler_history_free(back);
	free(blob);
	kepler_history_free(h);
}

/*
 * Records written before pods had owners decode:
 * tests/golden/history-1.1.record was written by the codec of commit
 * 1398388 (format 1.1, as now) from this file's fixture (snapshots 1-3 at
 * 1001-1003 s, 1000·i µJ, 400 g/kWh, the 1h tier of 2 h): the same
 * counters as this codec's ledger of them, owners and labels "". The same
 * bytes as a 1.0 record (its checksum of the frame alone) too.
 */
static void test_records_of_older_formats(void **state)
{
	struct kepler_history *h = kepler_history_new(), *back = NULL;
	struct kepler_history_header got;
	struct kepler_error err = { 0 };
	struct fixture f;
	char path[4096];
	unsigned char b[4096];
	size_t len;
	FILE *in;

	(void)state;
	snprintf(path, sizeof(path), "%s/tests/golden/history-1.1.record", KEPLER_SOURCE_DIR);
	in = fopen(path, "rb");
	assert_non_null(in);
	len = fread(b, 1, sizeof(b), in);
	fclose(in);
	for (uint64_t i = 1; i <= 3; i++) {
		make(&f, i, 1000 + i, 1000 * i);
		assert_int_equal(kepler_history_add(h, &f.s, 400000), 0);
	}
	assert_int_equal(kepler_history_decode(b, len, &back, &got, &err), 0);
	assert_int_equal(got.format_minor, 1);
	assert_int_equal(kepler_history_count(back), kepler_history_count(h));
	for (size_t i = 0; i < kepler_history_count(h); i++) {
		const struct kepler_history_row *a = kepler_history_row(h, i),
						*c = kepler_history_find(back, a);

		assert_non_null(c);
		assert_memory_equal(a->energy_uj, c->energy_uj, NZ * sizeof(uint64_t));
		assert_memory_equal(a->co2e_mg, c->co2e_mg, NZ * sizeof(uint64_t));
		assert_memory_equal(a->co2e_rem, c->co2e_rem, NZ * sizeof(uint64_t));
		assert_string_equal(c->owner_kind, "");
		assert_string_equal(c->labels, "");
	}
	kepler_history_free(back);
	memset(b + 8, 0, 4);
	b[8] = KEPLER_HISTORY_MISSED;
	/* a format 1.0 record (its checksum of the frame alone) still decodes; unknown flags do not */
	{
		uint64_t sum = XXH3_64bits(b + 40, len - 40);

		b[6] = 0;
		for (int i = 0; i < 8; i++)
			b[32 + i] = (unsigned char)(sum >> (8 * i));
		assert_int_equal(kepler_history_decode(b, len, &back, &got, &err), 0);
		assert_int_equal(got.format_minor, 0);
		assert_int_equal(got.flags, KEPLER_HISTORY_MISSED);
		kepler_history_free(back);
		b[9] = 0x80;
		assert_int_equal(kepler_history_decode(b, len, &back, &got, &err), -EPROTO);
		assert_string_equal(err.msg, "tier record: unknown flags 0x8001");
		b[9] = 0;
	}
	kepler_history_free(h);
}

static void test_carbon_file(void **state)
{
	struct kepler_carbon c;
	struct kepler_error err = { 0 };
	const char *good = "# the grid\n\n2026-11-01T00:00:00Z,300\n2026-11-01T01:00:00+01:00,250\r\n"
			   "2026-11-01T06:00:00.5Z, 410.25 \n";
	uint32_t mg;

	(void)state;
	/* 01:00+01:00 is 00:00Z: not after the line before it */
	assert_int_equal(kepler_carbon_parse(good, strlen(good), &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "line 4: times must ascend"));
	good = "2026-11-01T00:00:00Z,300\n2026-11-01T02:00:00+01:00,250\n2026-11-01T06:00:00.5Z, 410.25 \n";
	assert_int_equal(kepler_carbon_parse(good, strlen(good), &c, &err), 0);
	assert_int_equal(c.n, 3);
	assert_int_equal(kepler_carbon_at(&c, 1793491200ULL * 1000000000ULL - 1), 0);
	assert_int_equal(kepler_carbon_at(&c, 1793491200ULL * 1000000000ULL), 300000);
	assert_int_equal(kepler_carbon_at(&c, 1793494800ULL * 1000000000ULL), 250000);
	assert_int_equal(kepler_carbon_at(&c, UINT64_MAX), 410250);
	assert_int_equal(c.points[0].kind, KEPLER_CARBON_KIND_MEASURED); /* no third column */
	kepler_carbon_free(&c);
	/* kepler-carbon's third column: what each value is */
	good = "2026-11-01T00:00:00Z,300.000,measured\n2026-11-01T00:30:00Z,290.000,forecast\r\n"
	       "2026-11-01T01:00:00Z,290.000,fallback \n2026-11-01T02:00:00Z,212,static\n"
	       "2026-11-01T03:00:00.350000000Z,302.5,estimated\n";
	assert_int_equal(kepler_carbon_parse(good, strlen(good), &c, &err), 0);
	assert_int_equal(c.n, 5);
	assert_int_equal(c.points[1].kind, KEPLER_CARBON_KIND_FORECAST);
	assert_int_equal(c.points[2].kind, KEPLER_CARBON_KIND_FALLBACK);
	assert_int_equal(c.points[3].kind, KEPLER_CARBON_KIND_STATIC);
	assert_int_equal(c.points[4].kind, KEPLER_CARBON_KIND_ESTIMATED);
	assert_int_equal(c.points[4].mg_kwh, 302500);
	assert_string_equal(kepler_carbon_kind_name(KEPLER_CARBON_KIND_FALLBACK), "fallback");
	kepler_carbon_free(&c);
	good = "2026-11-01T00:00:00Z,300,guessed\n";
	assert_int_equal(kepler_carbon_parse(good, strlen(good), &c, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "line 1: 'guessed' is not a kind"));
	const char *bad[] = { "2026-11-01T00:00:00Z;300\n",
			      "2026-11-01,300\n",
			      "2026-11-01T00:00:00Z,-5\n",
			      "2026-11-01T00:00:00Z,abc\n",
			      "now,300\n",
			      "2026-11-01T01:00:00Z,300\n2026-11-01T00:00:00Z,200\n" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(kepler_carbon_parse(bad[i], strlen(bad[i]), &c, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "line "));
	}
	assert_int_equal(kepler_carbon_parse_value("420.5", &mg), 0);
	assert_int_equal(mg, 420500);
	assert_int_equal(kepler_carbon_parse_value("0", &mg), -EINVAL);
	assert_int_equal(kepler_carbon_parse_value("1e9", &mg), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identities_and_sums),
		cmocka_unit_test(test_shared_strings_same_rows),
		cmocka_unit_test(test_runs_exact),
		cmocka_unit_test(test_co2e_exact),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_record_round_trip_and_damage),
		cmocka_unit_test(test_records_of_older_formats),
		cmocka_unit_test(test_carbon_file),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
