// SPDX-License-Identifier: Apache-2.0
/*
 * bench_push_wire [PROCESSES] [ROUNDS]: where kepler-push's CPU per
 * snapshot goes once the exposition text is rendered, for
 * docs/performance.md. The text is made here, shaped as the exporter's
 * process families (7 series a process: joules and watts in 3 zones, CPU
 * seconds; 9 labels each, node_name to zone); then, each a mean over ROUNDS
 * snapshots after one that fills the series table, CPU time
 * (CLOCK_PROCESS_CPUTIME_ID) of: reading the text back, finding each
 * sample's series, packing and snappy-compressing the remote-write request,
 * and, as the floor any remote-write 1.0 sender pays for these bytes,
 * snappy alone on the packed request and a plain copy of it; the same for
 * OTLP without compression, and libdeflate's gzip of its bytes.
 */
#include <libdeflate.h>
#include <snappy-c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kepler/buf.h"
#include "otlp.h"
#include "remote_write.h"
#include "samples.h"

static double cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Snapshot @round's text: the values change, the series do not. */
static void text(struct kepler_buf *b, int nproc, int round)
{
	static const char *const zones[] = { "package", "core", "dram" };
	static const char *const fam[] = { "kepler_process_cpu_joules_total", "kepler_process_cpu_watts" };

	kepler_buf_reset(b);
	for (int f = 0; f < 2; f++) {
		kepler_buf_printf(b, "# TYPE %s %s\n", fam[f], f ? "gauge" : "counter");
		for (int i = 0; i < nproc; i++)
			for (int z = 0; z < 3; z++)
				kepler_buf_printf(
					b,
					"%s{comm=\"worker-%d\",container_id=\"%s\",exe=\"/usr/bin/worker\","
					"node_name=\"node-17.example.com\",pid=\"%d\",state=\"running\",type=\"%s\","
					"vm_id=\"\",zone=\"%s\"} %d.%06d\n",
					fam[f], i % 50, i % 10 ? "" : "3f2a9c0e8b7d6a5f4e3d2c1b0a9f8e7d",
					1000 + i, i % 10 ? "regular" : "container", zones[z],
					round * 3 + i % 7, (i * 37) % 1000000);
	}
	kepler_buf_printf(b, "# TYPE kepler_process_cpu_seconds_total counter\n");
	for (int i = 0; i < nproc; i++)
		kepler_buf_printf(b,
				  "kepler_process_cpu_seconds_total{comm=\"worker-%d\",container_id=\"%s\","
				  "exe=\"/usr/bin/worker\",node_name=\"node-17.example.com\",pid=\"%d\","
				  "type=\"%s\",vm_id=\"\"} %d.%09d\n",
				  i % 50, i % 10 ? "" : "3f2a9c0e8b7d6a5f4e3d2c1b0a9f8e7d", 1000 + i,
				  i % 10 ? "regular" : "container", round + i % 11, (i * 7919) % 1000000000);
}

int main(int argc, char **argv)
{
	int nproc = argc > 1 ? atoi(argv[1]) : 10000, rounds = argc > 2 ? atoi(argv[2]) : 20;
	struct kepler_buf b = KEPLER_BUF_INIT;
	struct push_samples set = PUSH_SAMPLES_INIT;
	struct push_request *rw = push_request_new();
	struct push_otlp *o = push_otlp_new();
	struct push_otlp_node node = { "node-17", "node-17", "" };
	struct libdeflate_compressor *gz = libdeflate_alloc_compressor(1);
	double t_parse = 0, t_find = 0, t_rw = 0, t_snappy = 0, t_copy = 0, t_ofind = 0, t_otlp = 0,
	       t_gzip = 0;
	size_t raw_len = 0, body_len = 0, olen = 0, gzlen = 0;

	if (!rw || !o || !gz || nproc < 1 || rounds < 1) {
		fprintf(stderr, "usage: bench_push_wire [PROCESSES] [ROUNDS]\n");
		return 2;
	}
	for (int r = 0; r <= rounds; r++) {
		void *body, *ob;
		char *raw, *again, *gzb;
		size_t alen;
		double t0;

		text(&b, nproc, r);
		t0 = cpu_ms();
		if (push_samples_parse(&set, b.data, b.len) < 0)
			return 1;
		t_parse += r ? cpu_ms() - t0 : 0;
		t0 = cpu_ms();
		push_request_reset(rw);
		if (push_request_add(rw, set.v, set.n, 1000 * r) < 0)
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
	printf("  the text read back: %.2f ms (%zu bytes)\n", t_parse / rounds, b.len);
	printf("  remote-write: series found %.2f, packed and compressed %.2f (%zu bytes packed, %zu sent); "
	       "of which the floor: snappy alone %.2f, a copy of the packed bytes %.2f\n",
	       t_find / rounds, t_rw / rounds, raw_len, body_len, t_snappy / rounds, t_copy / rounds);
	printf("  OTLP: series found %.2f, packed %.2f (%zu bytes), libdeflate gzip level 1 %.2f (%zu bytes)\n",
	       t_ofind / rounds, t_otlp / rounds, olen, t_gzip / rounds, gzlen);
	libdeflate_free_compressor(gz);
	push_samples_free(&set);
	push_request_free(rw);
	push_otlp_free(o);
	kepler_buf_free(&b);
	return 0;
}
