// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-stdout: prints snapshots from the store, as tables for people or
 * JSON (one object per line) for programs: the newest, one by seq or time,
 * every retained one, and/or each new one as it is committed (--follow).
 * Exit status: 0 printed, 1 no snapshot (yet, or at that time), 2 usage or
 * store errors.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kepler/clock.h"
#include "kepler/config.h"
#include "kepler/fmt.h"
#include "kepler/log.h"
#include "kepler/store.h"

#define SEC 1000000000ULL
#define EXIT_NONE 1
#define EXIT_USAGE 2

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

struct printer {
	struct kepler_store *store;
	bool json, clear; /* clear: refresh a terminal between tables */
	unsigned levels;
	struct kepler_table_options table;
	int64_t left; /* snapshots still to print; -1: no limit */
	size_t printed;
	struct kepler_buf buf;
};

/* Print snapshot @seq. 0 printed, 1 gone (pruned), -1 an error (logged). */
static int print_seq(struct printer *p, uint64_t seq)
{
	struct kepler_error err = { 0 };
	struct kepler_snapshot *s;
	int r = kepler_store_read(p->store, seq, &s, &err);

	if (r == -ENOENT)
		return 1;
	if (r < 0) {
		kepler_err("%s", err.msg);
		return -1;
	}
	kepler_buf_reset(&p->buf);
	if (p->json) {
		r = kepler_fmt_json(s, p->levels, &p->buf);
		kepler_buf_addc(&p->buf, '\n');
	} else {
		if (p->clear)
			kepler_buf_adds(&p->buf, "\033[H\033[2J");
		else if (p->printed)
			kepler_buf_addc(&p->buf, '\n');
		r = kepler_fmt_table(s, &p->table, &p->buf);
	}
	kepler_snapshot_free(s);
	if (r < 0 || p->buf.error) {
		kepler_err("out of memory formatting snapshot %llu", (unsigned long long)seq);
		return -1;
	}
	if (fwrite(p->buf.data, 1, p->buf.len, stdout) != p->buf.len || fflush(stdout) != 0)
		return -1; /* stdout closed: nothing more to do */
	p->printed++;
	if (p->left > 0)
		p->left--;
	return 0;
}

static int print_list(struct printer *p, const uint64_t *seqs, size_t n)
{
	for (size_t i = 0; i < n && p->left != 0 && !stop_signal; i++)
		if (print_seq(p, seqs[i]) < 0)
			return -1;
	return 0;
}

/*
 * Open the store; with --follow, wait for it while it does not exist yet
 * (or is being created) or is damaged, as the exporter does.
 */
static int open_store(const char *path, bool wait, struct printer *p)
{
	struct kepler_error err = { 0 };
	int r, last = 0;

	for (;;) {
		r = kepler_store_open_reader(path, &p->store, &err);
		if (r == 0)
			return 0;
		/* following: a store not there yet, or damaged until the collector repairs or replaces it */
		if (!wait || (r != -ENOENT && r != -EUCLEAN) || stop_signal) {
			kepler_err("%s", err.msg);
			return -1;
		}
		if (r != last)
			kepler_info("waiting for the store: %s", err.msg);
		last = r;
		sleep(1);
	}
}

/* The inode of the store's data file (0: none): a new store is a new file. */
static ino_t data_file(const char *path)
{
	char file[4200];
	struct stat st;

	snprintf(file, sizeof(file), "%s/data.mdb", path);
	return stat(file, &st) == 0 ? st.st_ino : 0;
}

/* Each snapshot after @last as it is committed, until --count or a signal. */
static int follow(struct printer *p, const char *path, uint64_t last)
{
	while (p->left != 0 && !stop_signal) {
		struct kepler_error err = { 0 };
		uint64_t newest, *seqs = NULL;
		size_t n = 0;
		int r = kepler_store_wait(p->store, last, SEC, &newest, &err);

		if (r == -ETIMEDOUT || r == -EINTR)
			continue;
		if (r == -ESTALE) { /* a new collector made a new store: follow it from its start */
			kepler_info("%s: following the new one", err.msg);
			kepler_store_close(p->store);
			p->store = NULL;
			if (open_store(path, true, p) < 0)
				return stop_signal ? 0 : -1;
			last = 0;
			continue;
		}
		if (r == 0)
			r = kepler_store_list(p->store, last + 1, newest, &seqs, &n, &err);
		if (r == -EUCLEAN) {
			/* damaged: the collector repairs a meta page at its next commit, or a new store replaces it */
			ino_t damaged = data_file(path);

			kepler_warn("%s; waiting for it to be repaired or replaced", err.msg);
			kepler_store_close(p->store);
			p->store = NULL;
			if (open_store(path, true, p) < 0)
				return stop_signal ? 0 : -1;
			/*
			 * a new store (a new file: store.move-damaged kept the old one aside) counts
			 * from 1 again, however many snapshots it has by now (a loaded machine runs
			 * this late); the same file repaired goes on from where it was
			 */
			if (data_file(path) != damaged ||
			    (kepler_store_latest_seq(p->store, &newest, &err) == 0 && newest < last))
				last = 0;
			kepler_info("the store reads again: following it from snapshot %llu",
				    (unsigned long long)last + 1);
			continue;
		}
		if (r < 0) {
			kepler_err("%s", err.msg);
			return -1;
		}
		r = print_list(p, seqs, n);
		free(seqs);
		if (r < 0)
			return -1;
		last = newest;
	}
	return 0;
}

/* The snapshots asked for by --seq, --at, --all or none of them (the newest). */
static int choose(const struct kepler_config *cfg, struct printer *p, uint64_t **seqs, size_t *n)
{
	struct kepler_error err = { 0 };
	uint64_t seq = 0, at, oldest = 0, newest = 0;
	int r;

	*n = 0;
	if (cfg->out.stdout_all) {
		r = kepler_store_list(p->store, 0, 0, seqs, n, &err);
		if (r < 0)
			goto fail;
		return *n || cfg->out.stdout_follow ? 0 : EXIT_NONE;
	}
	if (cfg->out.stdout_at && *cfg->out.stdout_at) {
		if (kepler_parse_time_flag("at", cfg->out.stdout_at, kepler_wall_ns(), &at) < 0)
			return EXIT_USAGE;
		r = kepler_store_seq_at(p->store, at, &seq, &err);
		if (r == -ENOENT) {
			kepler_err("no snapshot at or before %s in the store", cfg->out.stdout_at);
			return EXIT_NONE;
		}
	} else if (cfg->out.stdout_seq) {
		seq = (uint64_t)cfg->out.stdout_seq;
		r = kepler_store_list(p->store, seq, seq, seqs, n, &err);
		if (r == 0 && *n == 0) {
			kepler_store_oldest_seq(p->store, &oldest, &err);
			kepler_store_latest_seq(p->store, &newest, &err);
			if (oldest)
				kepler_err("snapshot %llu is not in the store (it keeps %llu to %llu)",
					   (unsigned long long)seq, (unsigned long long)oldest,
					   (unsigned long long)newest);
			else
				kepler_err("snapshot %llu is not in the store (it has none yet)",
					   (unsigned long long)seq);
			return EXIT_NONE;
		}
		return r < 0 ? (kepler_err("%s", err.msg), EXIT_USAGE) : 0;
	} else {
		r = kepler_store_latest_seq(p->store, &seq, &err);
		if (r == -ENOENT) {
			if (cfg->out.stdout_follow)
				return 0;
			kepler_err("the store has no snapshot yet (is kepler-collectd running?)");
			return EXIT_NONE;
		}
	}
	if (r < 0)
		goto fail;
	*seqs = malloc(sizeof(**seqs));
	if (!*seqs)
		return EXIT_USAGE;
	(*seqs)[0] = seq;
	*n = 1;
	return 0;
fail:
	kepler_err("%s", err.msg);
	return EXIT_USAGE;
}

static int check_flags(const struct kepler_config *cfg, struct printer *p)
{
	int modes = (cfg->out.stdout_all != 0) + (cfg->out.stdout_seq != 0) +
		    (cfg->out.stdout_at && *cfg->out.stdout_at);

	if (modes > 1) {
		kepler_err("--all, --seq and --at choose snapshots in different ways: give one of them");
		return EXIT_USAGE;
	}
	if (cfg->out.stdout_follow && (cfg->out.stdout_seq || (cfg->out.stdout_at && *cfg->out.stdout_at))) {
		kepler_err(
			"--follow prints new snapshots: it goes with --all or alone, not with --seq or --at");
		return EXIT_USAGE;
	}
	if (kepler_sort_from_name(cfg->out.stdout_sort, &p->table.sort) < 0) {
		kepler_err("invalid --sort '%s': one of watts, energy, cpu, pid, name", cfg->out.stdout_sort);
		return EXIT_USAGE;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct kepler_config cfg;
	struct printer p = { .buf = KEPLER_BUF_INIT };
	struct sigaction sa;
	uint64_t *seqs = NULL;
	size_t n = 0;
	int rc;

	kepler_config_parse_or_exit(&cfg, &kepler_program_stdout, argc, argv);
	kepler_log_setup(kepler_program_stdout.name, cfg.log_level, cfg.log_format);
	rc = check_flags(&cfg, &p);
	if (rc)
		goto out;
	p.levels = kepler_levels_from_list(&cfg.out.stdout_level);
	p.table.levels = p.levels;
	p.table.limit = (size_t)cfg.out.stdout_limit;
	p.json = cfg.out.stdout_format == KEPLER_STDOUT_JSON ||
		 (cfg.out.stdout_format == KEPLER_STDOUT_AUTO && !isatty(STDOUT_FILENO));
	p.clear = !p.json && cfg.out.stdout_follow && isatty(STDOUT_FILENO);
	p.left = cfg.out.stdout_count ? cfg.out.stdout_count : -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (open_store(cfg.store_path, cfg.out.stdout_follow, &p) < 0) {
		rc = stop_signal ? 0 : EXIT_USAGE;
		goto out;
	}
	rc = choose(&cfg, &p, &seqs, &n);
	if (rc)
		goto out;
	if (print_list(&p, seqs, n) < 0) {
		rc = EXIT_USAGE;
		goto out;
	}
	if (cfg.out.stdout_follow && follow(&p, cfg.store_path, n ? seqs[n - 1] : 0) < 0)
		rc = EXIT_USAGE;
	else if (!p.printed && !stop_signal)
		rc = EXIT_NONE; /* everything asked for was pruned meanwhile */
out:
	free(seqs);
	kepler_buf_free(&p.buf);
	kepler_store_close(p.store);
	kepler_config_done(&cfg);
	return rc;
}
