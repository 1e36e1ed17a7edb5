// SPDX-License-Identifier: Apache-2.0
/*
 * The store under real processes: a writer killed with SIGKILL at random
 * moments while it commits, and readers reading while a writer commits.
 * Every snapshot read must decode and equal the snapshot its writer built
 * (rebuilt from the seed carried in its timestamp).
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "kepler/store.h"
#include "snapshot_fixture.h"

#define SEC 1000000000ULL
#define BASE_NS 1795881600000000000ULL
#define KILLS 200
#define PROCS 300

static char dir[64];

static struct kepler_store_options options(void)
{
	return (struct kepler_store_options){
		.path = dir,
		.map_size = 64ULL << 20,
		.retention_snapshots = 50,
		.retention_series_ns = 3600 * SEC,
	};
}

/* 0 if @s is exactly what fixture_build() made for its seed, else -1. */
static int consistent(const struct kepler_snapshot *s, const char **ret_diff)
{
	struct fixture f;
	uint64_t seed = (s->wall_ns - BASE_NS) / (5 * SEC);
	const char *diff;

	fixture_build(&f, s->nprocesses, seed);
	f.snap.seq = s->seq;
	diff = snapshot_diff(&f.snap, s);
	fixture_free(&f);
	*ret_diff = diff;
	return diff ? -1 : 0;
}

/*
 * Child: commit forever (until killed); seeds follow seqs. After its first
 * commit it writes one byte to @ready_fd, so the parent can also kill it
 * mid-commit on a machine so busy that 30 ms never reach a first commit.
 */
static void __attribute__((noreturn)) write_forever(int ready_fd)
{
	struct kepler_store_options o = options();
	struct kepler_store *w;
	struct fixture f;

	if (kepler_store_open_writer(&o, &w, NULL) < 0)
		_exit(3);
	for (uint64_t seed = (uint64_t)getpid();; seed++) {
		fixture_build(&f, PROCS, seed % 100000);
		if (kepler_store_commit(w, &f.snap, NULL) < 0)
			_exit(4);
		fixture_free(&f);
		if (ready_fd >= 0) {
			if (write(ready_fd, "c", 1) != 1)
				_exit(5);
			close(ready_fd);
			ready_fd = -1;
		}
	}
}

/* Wait (up to 60 s) for the writer's first commit; -1 if it never came. */
static int wait_first_commit(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&p, 1, 60000) != 1)
		return -1;
	return read(fd, &c, 1) == 1 ? 0 : -1;
}

static uint64_t check_latest(uint64_t after)
{
	struct kepler_store *r;
	struct kepler_snapshot *s;
	struct kepler_error err;
	const char *diff;
	uint64_t seq;
	int rc;

	rc = kepler_store_open_reader(dir, &r, &err);
	if (rc == -ENOENT && after == 0)
		return 0; /* killed before it created the store */
	if (rc < 0)
		fail_msg("store does not open after a kill: %s", err.msg);
	rc = kepler_store_read(r, 0, &s, &err);
	if (rc == -ENOENT && after == 0) {
		kepler_store_close(r);
		return 0; /* killed before the first commit */
	}
	if (rc < 0)
		fail_msg("latest snapshot unreadable after a kill: %s", err.msg);
	if (consistent(s, &diff) < 0)
		fail_msg("snapshot %llu inconsistent after a kill: %s", (unsigned long long)s->seq, diff);
	if (s->seq < after)
		fail_msg("seq went back from %llu to %llu", (unsigned long long)after,
			 (unsigned long long)s->seq);
	seq = s->seq;
	kepler_snapshot_free(s);
	kepler_store_close(r);
	return seq;
}

static void test_sigkill_while_committing(void **state)
{
	uint64_t last = 0, advanced = 0;

	(void)state;
	srand((unsigned)time(NULL));
	for (int i = 0; i < KILLS; i++) {
		uint64_t seq;
		int status, fds[2];
		pid_t pid;

		assert_int_equal(pipe(fds), 0);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			write_forever(fds[1]);
		}
		close(fds[1]);
		/*
		 * Odd rounds: killed at a random moment from its start (opening
		 * or committing). Even rounds: at a random moment after its first
		 * commit, so kills land mid-commit however busy the machine is.
		 */
		if (i % 2 == 0 && wait_first_commit(fds[0]) < 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("writer made no commit within 60 s");
		}
		usleep((useconds_t)(rand() % 30000)); /* 0-30 ms */
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		close(fds[0]); /* open until now: the writer's byte never meets EPIPE */
		if (!WIFSIGNALED(status))
			fail_msg("writer exited by itself with status %d", WEXITSTATUS(status));
		seq = check_latest(last);
		advanced += seq > last;
		last = seq;
	}
	print_message("%d kills; latest seq %llu; a new snapshot survived %llu of them\n", KILLS,
		      (unsigned long long)last, (unsigned long long)advanced);
	/* Half the writers committed before they were killed: those must show. */
	assert_true(advanced >= KILLS / 2);
}

/* Child: read the newest snapshot until @until_ns; exit 0 if all were good. */
static void __attribute__((noreturn)) read_until(uint64_t until_ns)
{
	struct kepler_store *r = NULL;
	struct kepler_snapshot *s;
	struct kepler_error err;
	struct timespec ts;
	unsigned reads = 0;
	const char *diff;
	int rc;

	do {
		if (!r && kepler_store_open_reader(dir, &r, NULL) < 0)
			r = NULL;
		rc = r ? kepler_store_read(r, 0, &s, &err) : -ENOENT;
		if (rc < 0 && rc != -ENOENT) {
			/* readers take no lock: a read racing commits must still succeed */
			fprintf(stderr, "reader: read failed during commits: %s\n", err.msg);
			_exit(3);
		}
		if (rc == 0) {
			if (consistent(s, &diff) < 0) {
				fprintf(stderr, "reader: snapshot %llu differs in %s\n",
					(unsigned long long)s->seq, diff);
				_exit(1);
			}
			kepler_snapshot_free(s);
			reads++;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
	} while ((uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec < until_ns);
	kepler_store_close(r);
	fprintf(stderr, "reader %d: %u consistent reads\n", getpid(), reads);
	_exit(reads > 0 ? 0 : 2);
}

static void test_readers_during_commits(void **state)
{
	struct kepler_store_options o = options();
	struct kepler_store *w;
	struct timespec ts;
	pid_t readers[3];
	int status;

	(void)state;
	assert_int_equal(kepler_store_open_writer(&o, &w, NULL), 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	for (int i = 0; i < 3; i++) {
		readers[i] = fork();
		assert_true(readers[i] >= 0);
		if (readers[i] == 0)
			read_until((uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec + 3 * SEC);
	}
	for (uint64_t seed = 0; seed < 300; seed++) {
		struct fixture f;

		fixture_build(&f, PROCS, seed);
		assert_int_equal(kepler_store_commit(w, &f.snap, NULL), 0);
		fixture_free(&f);
	}
	for (int i = 0; i < 3; i++) {
		assert_int_equal(waitpid(readers[i], &status, 0), readers[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	kepler_store_close(w);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/kepler-stress-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sigkill_while_committing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readers_during_commits, setup, teardown),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
