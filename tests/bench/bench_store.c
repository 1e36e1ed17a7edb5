// SPDX-License-Identifier: Apache-2.0
/*
 * bench_store: prints the store's speed and size figures (not a test).
 *   build/tests/bench_store [DIR]
 *   build/tests/bench_store --store STORE_DIR   the newest snapshot of a real
 *        store: its size plain (1.5) and as stored (4.0), decode times
 *   build/tests/bench_store --decode N [REPS]   decode only, of the N-process
 *        fixture as stored, REPS times (for perf): median time and the page
 *        faults each decode takes
 * Commit time and blob size for 100 / 1k / 10k / 100k processes, decode
 * and open+decode of the newest snapshot, reader attach + newest header,
 * and a 24 h series range read (17,280 records at 5 s). Medians of repeats.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kepler/store.h"
#include "snapshot_fixture.h"

#define SEC 1000000000ULL

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static _Noreturn void die(const char *what, const struct kepler_error *err)
{
	fprintf(stderr, "bench_store: %s: %s\n", what, err->msg);
	exit(1);
}

static void bench_size(const char *dir, size_t nprocs, int reps)
{
	struct kepler_store_options o = { .path = dir,
					  .map_size = 4ULL << 30,
					  .retention_snapshots = 8,
					  .retention_series_ns = 86400 * SEC };
	struct kepler_store *w, *r;
	struct kepler_snapshot *s;
	struct kepler_error err;
	struct fixture f;
	double commit[32], decode[32], decode_plain[32], read_decode[32], open_decode[32], t;
	void *blob, *plain;
	size_t len, plain_len;

	struct kepler_store *attached;

	if (kepler_store_open_writer(&o, &w, &err) < 0)
		die("open writer", &err);
	fixture_build(&f, nprocs, 1);
	kepler_snapshot_encode(&f.snap, &plain, &plain_len, NULL);
	kepler_snapshot_encode_packed(&f.snap, KEPLER_PACK_AUTO, &blob, &len,
				      NULL); /* what the store keeps */
	if (kepler_store_commit(w, &f.snap, &err) < 0 || kepler_store_open_reader(dir, &attached, &err) < 0)
		die("attach", &err);
	for (int i = 0; i < reps; i++) {
		t = now_us();
		if (kepler_store_commit(w, &f.snap, &err) < 0)
			die("commit", &err);
		commit[i] = now_us() - t;
		t = now_us();
		kepler_snapshot_decode(blob, len, &s, NULL);
		decode[i] = now_us() - t;
		kepler_snapshot_free(s);
		t = now_us();
		kepler_snapshot_decode(plain, plain_len, &s, NULL);
		decode_plain[i] = now_us() - t;
		kepler_snapshot_free(s);
		t = now_us();
		if (kepler_store_read(attached, 0, &s, &err) < 0)
			die("read", &err);
		read_decode[i] = now_us() - t;
		kepler_snapshot_free(s);
		t = now_us();
		if (kepler_store_open_reader(dir, &r, &err) < 0 || kepler_store_read(r, 0, &s, &err) < 0)
			die("read", &err);
		kepler_snapshot_free(s);
		kepler_store_close(r);
		open_decode[i] = now_us() - t;
	}
	printf("| %zu | %.1f KiB | %.1f KiB | %.2f ms | %.3f ms | %.3f ms | %.3f ms | %.3f ms |\n", nprocs,
	       (double)plain_len / 1024, (double)len / 1024, median(commit, reps) / 1000,
	       median(decode_plain, reps) / 1000, median(decode, reps) / 1000,
	       median(read_decode, reps) / 1000, median(open_decode, reps) / 1000);
	kepler_store_close(attached);
	free(plain);
	free(blob);
	fixture_free(&f);
	kepler_store_close(w);
}

static void bench_attach_and_series(const char *dir)
{
	struct kepler_store_options o = { .path = dir,
					  .map_size = 1ULL << 30,
					  .retention_snapshots = 2,
					  .retention_series_ns = 86400 * SEC };
	struct kepler_store *w, *r;
	struct kepler_series_record *recs;
	struct kepler_snapshot hdr;
	struct kepler_error err;
	struct fixture f;
	double attach[64], series[16], t;
	size_t n = 0;

	if (kepler_store_open_writer(&o, &w, &err) < 0)
		die("open writer", &err);
	fixture_build(&f, 1000, 0);
	for (uint64_t i = 0; i < 17280; i++) { /* 24 h at 5 s */
		f.snap.wall_ns = 1795881600000000000ULL + i * 5 * SEC;
		if (kepler_store_commit(w, &f.snap, &err) < 0)
			die("commit", &err);
	}
	for (int i = 0; i < 64; i++) {
		t = now_us();
		if (kepler_store_open_reader(dir, &r, &err) < 0 ||
		    kepler_store_read_header(r, &hdr, &err) < 0)
			die("attach", &err);
		attach[i] = now_us() - t;
		kepler_store_close(r);
	}
	kepler_store_open_reader(dir, &r, &err);
	for (int i = 0; i < 16; i++) {
		t = now_us();
		if (kepler_store_series(r, 0, 0, &recs, &n, &err) < 0)
			die("series", &err);
		series[i] = now_us() - t;
		free(recs);
	}
	printf("\nreader attach + newest header (1k-process snapshot): %.1f us (median of 64)\n",
	       median(attach, 64));
	printf("series range read, 24 h (%zu records): %.2f ms (median of 16)\n", n,
	       median(series, 16) / 1000);
	kepler_store_close(r);
	kepler_store_close(w);
	fixture_free(&f);
}

/* kepler_store_seq_at over a full default ring (720 snapshots of 1000 processes). */
static void bench_seq_at(const char *dir)
{
	struct kepler_store_options o = { .path = dir,
					  .map_size = 1ULL << 30,
					  .retention_snapshots = 720,
					  .retention_series_ns = 86400 * SEC };
	struct kepler_store *w, *r;
	struct kepler_error err;
	struct fixture f;
	double at[64], t;
	uint64_t seq;

	if (kepler_store_open_writer(&o, &w, &err) < 0)
		die("open writer", &err);
	fixture_build(&f, 1000, 0);
	for (uint64_t i = 0; i < 720; i++) {
		f.snap.wall_ns = 1795881600000000000ULL + i * 5 * SEC;
		if (kepler_store_commit(w, &f.snap, &err) < 0)
			die("commit", &err);
	}
	if (kepler_store_open_reader(dir, &r, &err) < 0)
		die("open reader", &err);
	for (int i = 0; i < 64; i++) {
		t = now_us();
		if (kepler_store_seq_at(r, 1795881600000000000ULL + (uint64_t)(i * 11 % 720) * 5 * SEC, &seq,
					&err) < 0)
			die("seq_at", &err);
		at[i] = now_us() - t;
	}
	printf("seq_at (a time in a ring of 720 snapshots of 1000 processes): %.1f us (median of 64)\n",
	       median(at, 64));
	kepler_store_close(r);
	kepler_store_close(w);
	fixture_free(&f);
}

/* The newest snapshot of the store at @path: sizes and decode times, plain and packed. */
static int bench_real(const char *path)
{
	struct kepler_store *r;
	struct kepler_snapshot *s, *d;
	struct kepler_error err;
	double plain_us[15], packed_us[15], encode_us[15], t;
	void *plain, *packed, *again;
	size_t plain_len, packed_len, again_len, level1_len;

	if (kepler_store_open_reader(path, &r, &err) < 0 || kepler_store_read(r, 0, &s, &err) < 0)
		die("read", &err);
	if (kepler_snapshot_encode(s, &plain, &plain_len, &err) < 0 ||
	    kepler_snapshot_encode_packed(s, KEPLER_PACK_AUTO, &packed, &packed_len, &err) < 0 ||
	    kepler_snapshot_encode_packed(s, 1, &again, &level1_len, &err) < 0)
		die("encode", &err);
	free(again);
	for (int i = 0; i < 15; i++) {
		t = now_us();
		if (kepler_snapshot_decode(plain, plain_len, &d, &err) < 0)
			die("decode", &err);
		plain_us[i] = now_us() - t;
		kepler_snapshot_free(d);
		t = now_us();
		if (kepler_snapshot_decode(packed, packed_len, &d, &err) < 0)
			die("decode", &err);
		packed_us[i] = now_us() - t;
		kepler_snapshot_free(d);
		t = now_us();
		if (kepler_snapshot_encode_packed(s, KEPLER_PACK_AUTO, &again, &again_len, &err) < 0)
			die("encode", &err);
		encode_us[i] = now_us() - t;
		free(again);
	}
	printf("snapshot %llu of %s: %zu processes, %zu containers, %zu zones\n"
	       "plain (1.5) %.1f KiB, decode %.3f ms; stored (4.0, %s) %.1f KiB, decode %.3f ms, encode %.3f ms "
	       "(medians of 15)\n",
	       (unsigned long long)s->seq, path, s->nprocesses, s->ncontainers, s->nzones,
	       (double)plain_len / 1024, median(plain_us, 15) / 1000,
	       packed_len == level1_len ? "zstd level 1" : "uncompressed", (double)packed_len / 1024,
	       median(packed_us, 15) / 1000, median(encode_us, 15) / 1000);
	free(plain);
	free(packed);
	kepler_snapshot_free(s);
	kepler_store_close(r);
	return 0;
}

/* Decode only, @reps times: the loop to profile. */
static int bench_decode(size_t nprocs, int reps, int level)
{
	struct kepler_snapshot *s;
	struct kepler_error err;
	struct rusage ru0, ru1;
	struct fixture f;
	double *t = calloc((size_t)reps, sizeof(*t));
	void *blob;
	size_t len;

	if (!t || reps < 1)
		return 1;
	fixture_build(&f, nprocs, 1);
	if (kepler_snapshot_encode_packed(&f.snap, level, &blob, &len, &err) < 0)
		die("encode", &err);
	getrusage(RUSAGE_SELF, &ru0);
	for (int i = 0; i < reps; i++) {
		double t0 = now_us();

		if (kepler_snapshot_decode(blob, len, &s, &err) < 0)
			die("decode", &err);
		t[i] = now_us() - t0;
		kepler_snapshot_free(s);
	}
	getrusage(RUSAGE_SELF, &ru1);
	printf("%zu processes, %.1f KiB stored: decode %.3f ms (median of %d), %.1f page faults a decode\n",
	       nprocs, (double)len / 1024, median(t, reps) / 1000, reps,
	       (double)(ru1.ru_minflt - ru0.ru_minflt) / reps);
	free(blob);
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 100, 1000, 10000, 100000 };
	char dir[256], cmd[300];

	if (argc == 3 && strcmp(argv[1], "--store") == 0)
		return bench_real(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "--decode") == 0)
		return bench_decode(strtoul(argv[2], NULL, 10), argc > 3 ? atoi(argv[3]) : 201,
				    argc > 4 ? atoi(argv[4]) : 1);
	snprintf(dir, sizeof(dir), "%s/kepler-bench-XXXXXX", argc > 1 ? argv[1] : "/tmp");
	if (!mkdtemp(dir)) {
		perror(dir);
		return 1;
	}
	printf("| processes | plain (1.5) | stored (4.0) | commit | decode 1.5 | decode 4.0 | read + decode | "
	       "open + read + decode |\n"
	       "|---|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < 4; i++) {
		char sub[300];

		snprintf(sub, sizeof(sub), "%s/s%zu", dir, i);
		bench_size(sub, sizes[i], sizes[i] >= 100000 ? 5 : 15);
	}
	snprintf(cmd, sizeof(cmd), "%s/series", dir);
	bench_attach_and_series(cmd);
	snprintf(cmd, sizeof(cmd), "%s/ring", dir);
	bench_seq_at(cmd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
