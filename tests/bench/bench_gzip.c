// SPDX-License-Identifier: Apache-2.0
/*
 * bench_gzip FILE [RUNS]: what gzip of an exposition costs, by compressor
 * and level: zlib 1, 3 (the exporter's until libdeflate), 6, and
 * libdeflate 1 to 6. For each: the median and the best CPU time of RUNS
 * compressions (default 9; CPU time of this thread, so a loaded machine
 * slows it less than wall time would) and the compressed size. FILE is a
 * page as the exporter serves it (curl -s http://HOST/metrics > FILE).
 * docs/performance.md ("gzip") records what it printed and the level
 * chosen.
 */
#include <errno.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static size_t zlib_gzip(int level, const char *in, size_t len, unsigned char *out, size_t cap)
{
	z_stream z;
	size_t n;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return 0;
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	n = deflate(&z, Z_FINISH) == Z_STREAM_END ? cap - z.avail_out : 0;
	deflateEnd(&z);
	return n;
}

static size_t libdeflate_gzip(int level, const char *in, size_t len, unsigned char *out, size_t cap)
{
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
	size_t n;

	if (!c)
		return 0;
	n = libdeflate_gzip_compress(c, in, len, out, cap);
	libdeflate_free_compressor(c);
	return n;
}

static int run(const char *name, int level, size_t (*f)(int, const char *, size_t, unsigned char *, size_t),
	       const char *in, size_t len, unsigned char *out, size_t cap, int runs)
{
	double *t = calloc((size_t)runs, sizeof(*t));
	size_t n = 0;

	if (!t)
		return -ENOMEM;
	for (int i = 0; i < runs; i++) {
		double t0 = cpu_ms();

		n = f(level, in, len, out, cap);
		t[i] = cpu_ms() - t0;
		if (!n) {
			fprintf(stderr, "bench_gzip: %s %d failed\n", name, level);
			free(t);
			return -EIO;
		}
	}
	qsort(t, (size_t)runs, sizeof(*t), cmp_double);
	printf("%-10s level %d: median %7.2f ms, best %7.2f ms, %9zu bytes (%.2f %%)\n", name, level,
	       t[runs / 2], t[0], n, 100.0 * (double)n / (double)len);
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = argc > 2 ? atoi(argv[2]) : 9, rc = 1;
	unsigned char *out = NULL;
	char *in = NULL;
	size_t len = 0, cap;
	FILE *f;

	if (argc < 2 || argc > 3 || runs < 1) {
		fprintf(stderr, "usage: bench_gzip FILE [RUNS]\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0 || (len = (size_t)ftell(f)) == 0 || fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "bench_gzip: cannot read %s: %s\n", argv[1], f ? "empty" : strerror(errno));
		goto out;
	}
	cap = len + len / 8 + 4096;
	in = malloc(len);
	out = malloc(cap);
	if (!in || !out || fread(in, 1, len, f) != len) {
		fprintf(stderr, "bench_gzip: cannot read %s\n", argv[1]);
		goto out;
	}
	printf("%s: %zu bytes, %d runs each\n", argv[1], len, runs);
	rc = 0;
	for (int level = 1; level <= 6 && !rc; level += level == 1 ? 2 : 3)
		rc = run("zlib", level, zlib_gzip, in, len, out, cap, runs) < 0;
	for (int level = 1; level <= 6 && !rc; level++)
		rc = run("libdeflate", level, libdeflate_gzip, in, len, out, cap, runs) < 0;
out:
	if (f)
		fclose(f);
	free(in);
	free(out);
	return rc;
}
