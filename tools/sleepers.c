/*
 * tools/sleepers.c: another job's idle processes, for the benchmarks
 * (bench-idle-liveness.sh, bench-side-by-side.sh --informer ebpf,
 * bench-collector-ab.sh).
 * Usage: sleepers N WAKE_MS: N children in a process group of their own
 * (the caller stops them with kill -TERM -- -PID), each waking every
 * WAKE_MS, its wake-ups spread over the period, to run a few µs and sleep
 * again. Built by the scripts with cc; not part of the product.
 */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[1]) : 0, wake_ms = argc > 2 ? atoi(argv[2]) : 0;

	if (n <= 0 || wake_ms <= 0)
		return 2;
	setpgid(0, 0);
	for (int i = 0; i < n; i++)
		if (fork() == 0) {
			struct timespec ts = { (i % wake_ms) / 1000, (long)(i % wake_ms) % 1000 * 1000000L };

			nanosleep(&ts, NULL); /* spread the wake-ups over the period */
			for (;;) {
				volatile unsigned x = 0;

				for (int k = 0; k < 2000; k++)
					x += (unsigned)k;
				ts.tv_sec = wake_ms / 1000;
				ts.tv_nsec = (long)(wake_ms % 1000) * 1000000L;
				nanosleep(&ts, NULL);
			}
		}
	pause();
	return 0;
}
