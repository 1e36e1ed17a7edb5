// SPDX-License-Identifier: Apache-2.0
/*
 * bench_push_wire [PROCESSES] [ROUNDS]: where kepler-push's CPU per
 * snapshot goes, for docs/performance.md. A snapshot is made here (3
 * zones, PROCESSES processes, one in ten in a container; the values change
 * from one snapshot to the next, the series do not) and, each a mean over
 * ROUNDS snapshots after one that fills the series table, CPU time
 * (CLOCK_PROCESS_CPUTIME_ID) of: the exporter's rendering alone
 * (kepler_fmt_prom(), for comparison), the same rendering recording the
 * samples kepler-push sends (kepler_fmt_prom_samples(): one iteration, two
 * sinks), finding each sample's series, packing and snappy-compressing the
 * remote-write request, and, as the floor any remote-write 1.0 sender pays
 * for these bytes, snappy alone on the packed request and a plain copy of
 * it; the same for OTLP without compression, and libdeflate's gzip of its
 * bytes.
 */
#include <libdeflate.h>
#include <snappy-c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kepler/buf.h"
#include "kepler/fmt.h"
#include "otlp.h"
#include "remote_write.h"
#include "samples.h"

static double cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* A snapshot of @nproc processes in 3 zones; snap_round() sets each round's values. */
struct fake {
	struct kepler_snapshot s;
	struct kepler_process *p;
	struct kepler_energy *e;
	char (*comm)[16];
};

static int fake_new(struct fake *f, int nproc)
{
	static const char *const zones[] = { "package", "core", "dram" };

	memset(f, 0, sizeof(*f));
	f->p = calloc((size_t)nproc, sizeof(*f->p));
	f->e = calloc((size_t)nproc * 3, sizeof(*f->e));
	f->comm = calloc((size_t)nproc, sizeof(*f->comm));
	if (!f->p || !f->e || !f->comm)
		return -1;
	f->s.nzones = 3;
	for (int z = 0; z < 3; z++)
		f->s.zones[z] = (struct kepler_zone){ .name = zones[z],
						      .path = "/sys/class/powercap/intel-rapl:0",
						      .source = KEPLER_SOURCE_RAPL };
	for (int i = 0; i < nproc; i++) {
		snprintf(f->comm[i], sizeof(f->comm[i]), "worker-%d", i % 50);
		f->p[i] = (struct kepler_process){
			.pid = (uint32_t)(1000 + i),
			.start_time_ns = (uint64_t)i,
			.comm = f->comm[i],
			.exe = "/usr/bin/worker",
			.type = i % 10 ? KEPLER_PROC_REGULAR : KEPLER_PROC_CONTAINER,
			.container_id = i % 10 ? "" : "3f2a9c0e8b7d6a5f4e3d2c1b0a9f8e7d",
			.vm_id = "",
			.usage = { .state = KEPLER_STATE_RUNNING, .zones = &f->e[3 * i] }
		};
	}
	f->s.nprocesses = (size_t)nproc;
	f->s.processes = f->p;
	return 0;
}

static void fake_round(struct fake *f, int round)
{
	f->s.seq = (uint64_t)round + 1;
	f->s.wall_ns = 1800000000000000000ULL + (uint64_t)round * 5000000000ULL;
	f->s.interval_ns = 5000000000ULL;
	for (size_t i = 0; i < f->s.nprocesses; i++) {
		f->p[i].usage.cpu_time_ns = (uint64_t)(round + 1) * 1000000 * (i % 11 + 1);
		for (int z = 0; z < 3; z++)
			f->e[3 * i + (size_t)z] =
				(struct kepler_energy){ (uint64_t)(round + 1) * 3000000 + i * 37 % 1000000,
							3000000 + i * 37 % 1000 };
	}
}

static void fake_free(struct fake *f)
{
	free(f->p);
	free(f->e);
	free(f->comm);
}

int main(int argc, char **argv)
{
	int nproc = argc > 1 ? atoi(argv[1]) : 10000, rounds = argc > 2 ? atoi(argv[2]) : 20;
	struct kepler_buf b = KEPLER_BUF_INIT;
	struct kepler_prom_samples found = { 0 };
	struct kepler_prom_options opts = { .levels = KEPLER_LEVEL_ALL, .node_name = "node-17.example.com" };
	struct push_samples set = PUSH_SAMPLES_INIT;
	struct push_request *rw = push_request_new();
	struct push_otlp *o = push_otlp_new();
	struct push_otlp_node node = { "node-17", "node-17", "" };
	struct libdeflate_compressor *gz = libdeflate_alloc_compressor(1);
	struct fake f;
	double t_text = 0, t_samples = 0, t_find = 0, t_rw = 0, t_snappy = 0, t_copy = 0, t_ofind = 0,
	       t_otlp = 0, t_gzip = 0;
	size_t raw_len = 0, body_len = 0, olen = 0, gzlen = 0, text_len = 0;

	if (!rw || !o || !gz || nproc < 1 || rounds < 1 || fake_new(&f, nproc) < 0) {
		fprintf(stderr, "usage: bench_push_wire [PROCESSES] [ROUNDS]\n");
		return 2;
	}
	for (int r = 0; r <= rounds; r++) {
		void *body, *ob;
		char *raw, *again, *gzb;
		size_t alen;
		double t0;

		fake_round(&f, r);
		kepler_buf_reset(&b);
		t0 = cpu_ms();
		if (kepler_fmt_prom(&f.s, &opts, &b) < 0)
			return 1;
		t_text += r ? cpu_ms() - t0 : 0;
		text_len = b.len;
		kepler_buf_reset(&b);
		found.keys_only = true; /* as kepler-push renders: keys and values, no decimals written */
		t0 = cpu_ms();
		if (kepler_fmt_prom_samples(&f.s, &opts, &b, &found) < 0 ||
		    push_samples_from(&set, b.data, &found) < 0)
			return 1;
		t_samples += r ? cpu_ms() - t0 : 0;
		t0 = cpu_ms();
		push_request_reset(rw);
		if (push_request_add(rw, set.v, set.n, INT64_C(1796000000000) + 5000 * r) < 0)
			return 1;
		t_find += r ? cpu_ms() - t0 : 0;
		t0 = cpu_ms();
		if (push_request_encode(rw, &body, &body_len) < 0)
			return 1;
		t_rw += r ? cpu_ms() - t0 : 0;
		/* the packed request again, to time snappy and a copy alone */
		if (snappy_uncompressed_length(body, body_len, &raw_len) != SNAPPY_OK ||
		    !(raw = malloc(raw_len)) || snappy_uncompress(body, body_len, raw, &raw_len) != SNAPPY_OK)
			return 1;
		alen = snappy_max_compressed_length(raw_len);
		if (!(again = malloc(alen)))
			return 1;
		memset(again, 0, alen); /* (its pages touched first, as a reused buffer's are) */
		t0 = cpu_ms();
		snappy_compress(raw, raw_len, again, &alen);
		t_snappy += r ? cpu_ms() - t0 : 0;
		t0 = cpu_ms();
		memcpy(again, raw, raw_len);
		t_copy += r ? cpu_ms() - t0 : 0;
		free(again);
		free(raw);
		free(body);
		t0 = cpu_ms();
		push_otlp_reset(o);
		if (push_otlp_add(o, set.v, set.n, 1000000000ULL * (uint64_t)r) < 0)
			return 1;
		t_ofind += r ? cpu_ms() - t0 : 0;
		t0 = cpu_ms();
		if (push_otlp_encode(o, &node, &ob, &olen) < 0)
			return 1;
		t_otlp += r ? cpu_ms() - t0 : 0;
		gzb = malloc(libdeflate_gzip_compress_bound(gz, olen));
		t0 = cpu_ms();
		gzlen = libdeflate_gzip_compress(gz, ob, olen, gzb, libdeflate_gzip_compress_bound(gz, olen));
		t_gzip += r ? cpu_ms() - t0 : 0;
		free(gzb);
		free(ob);
	}

	printf("%d processes, %zu samples a snapshot, %d snapshots (CPU ms a snapshot)\n", nproc, set.n,
	       rounds);
	printf("  the exporter's rendering %.2f ms (%zu bytes); kepler-push's samples (keys and values) %.2f ms\n",
	       t_text / rounds, text_len, t_samples / rounds);
	printf("  remote-write: series found %.2f, packed and compressed %.2f (%zu bytes packed, %zu sent); "
	       "of which the floor: snappy alone %.2f, a copy of the packed bytes %.2f\n",
	       t_find / rounds, t_rw / rounds, raw_len, body_len, t_snappy / rounds, t_copy / rounds);
	printf("  OTLP: series found %.2f, packed %.2f (%zu bytes), libdeflate gzip level 1 %.2f (%zu bytes)\n",
	       t_ofind / rounds, t_otlp / rounds, olen, t_gzip / rounds, gzlen);
	libdeflate_free_compressor(gz);
	push_samples_free(&set);
	kepler_prom_samples_free(&found);
	fake_free(&f);
	push_request_free(rw);
	push_otlp_free(o);
	kepler_buf_free(&b);
	return 0;
}
