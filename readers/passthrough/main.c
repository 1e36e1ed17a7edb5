// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-passthrough: follows the store and keeps, for each VM the collector
 * tracks, a directory laid out like the Linux powercap sysfs whose
 * energy_uj counters are that VM's cumulative energy (its active share, and
 * its idle share under attribution.idle cpu or size; see
 * docs/vm-passthrough.md). Shared read-only into the guest, any RAPL reader
 * there (kepler-collectd --meter.source passthrough, Kepler, Scaphandre,
 * node_exporter) reads its VM's share of the host's measured energy.
 *
 * DIR/VM/class/powercap/intel-rapl:0/{name,energy_uj,max_energy_range_uj}
 * is the package zone ("package-0"), intel-rapl:0:N the host's other zones
 * (core, uncore, dram, ...), intel-rapl:1 psys; DIR/VM/passthrough.txt says
 * which VM and which host snapshot. Every file is replaced atomically
 * (written aside, then renamed). A VM gone from the store's newest snapshot
 * loses its directory. Unprivileged: a member of the store's group that may
 * write DIR; it writes nothing outside DIR.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kepler/config.h"
#include "kepler/log.h"
#include "kepler/signals.h"
#include "kepler/store.h"

#define SEC 1000000000ULL
#define MAX_VMS 4096
#define NAME_MAX_VM 64
/* no real counter reaches this: a guest's reader never sees a wrap */
#define RANGE_UJ "4611686018427387904"

/* @in as a directory name: [A-Za-z0-9._-], at most NAME_MAX_VM, never "." or ".."; false if empty. */
static bool safe_name(const char *in, char *out)
{
	size_t n = 0;

	for (const char *p = in; *p && n < NAME_MAX_VM; p++) {
		char c = *p;

		out[n++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
					   c == '.' || c == '_' || c == '-'
				   ? c
				   : '_';
	}
	out[n] = '\0';
	if (out[0] == '.')
		out[0] = '_';
	return n > 0;
}

/* Write @text to DIR/@name atomically (DIR/.name.tmp, then rename). */
static int put_file(const char *dir, const char *name, const char *text)
{
	char tmp[4200], path[4200];
	size_t len = strlen(text);
	int fd, r = 0;

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0444);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		r = errno ? -errno : -EIO;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	return r;
}

static int make_dir(const char *path)
{
	return mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

/* The powercap entry of zone @name: package -> intel-rapl:0, psys -> intel-rapl:1, else a sub-zone of 0. */
static void entry_of(const char *name, unsigned *sub, char *entry, size_t size, char *label, size_t lsize)
{
	if (!strcmp(name, "package")) {
		snprintf(entry, size, "intel-rapl:0");
		snprintf(label, lsize, "package-0");
	} else if (!strcmp(name, "psys")) {
		snprintf(entry, size, "intel-rapl:1");
		snprintf(label, lsize, "psys");
	} else {
		snprintf(entry, size, "intel-rapl:0:%u", (*sub)++);
		snprintf(label, lsize, "%s", name);
	}
}

/* One VM's tree for @snap. */
static int write_vm(const char *top, const char *dirname, const struct kepler_snapshot *snap,
		    const struct kepler_workload *vm)
{
	char base[4200], dir[4400], text[512], entry[64], label[64];
	unsigned sub = 0;
	int r;

	snprintf(base, sizeof(base), "%s/%s", top, dirname);
	r = make_dir(base);
	snprintf(dir, sizeof(dir), "%s/class", base);
	if (!r)
		r = make_dir(dir);
	snprintf(dir, sizeof(dir), "%s/class/powercap", base);
	if (!r)
		r = make_dir(dir);
	for (size_t z = 0; z < snap->nzones && !r; z++) {
		entry_of(snap->zones[z].name, &sub, entry, sizeof(entry), label, sizeof(label));
		snprintf(dir, sizeof(dir), "%s/class/powercap/%s", base, entry);
		r = make_dir(dir);
		snprintf(text, sizeof(text), "%s\n", label);
		if (!r)
			r = put_file(dir, "name", text);
		if (!r)
			r = put_file(dir, "max_energy_range_uj", RANGE_UJ "\n");
		/* its active share, and under attribution.idle cpu or size the idle energy given to it */
		uint64_t uj =
			vm->usage->zones[z].total_uj + (vm->usage->idle ? vm->usage->idle[z].total_uj : 0);

		snprintf(text, sizeof(text), "%llu\n", (unsigned long long)uj);
		if (!r)
			r = put_file(dir, "energy_uj", text);
	}
	snprintf(text, sizeof(text), "vm_id %s\nvm_name %s\nhypervisor %s\nhost_seq %llu\n", vm->id, vm->name,
		 vm->detail, (unsigned long long)snap->seq);
	if (!r)
		r = put_file(base, "passthrough.txt", text);
	return r;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

/* Remove the trees of VMs not in @keep (only directories holding our passthrough.txt). */
static void remove_gone(const char *top, char (*keep)[NAME_MAX_VM + 1], size_t nkeep)
{
	DIR *d = opendir(top);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char path[4200], marker[4300];
		bool kept = false;

		if (e->d_name[0] == '.')
			continue;
		for (size_t i = 0; i < nkeep && !kept; i++)
			kept = !strcmp(keep[i], e->d_name);
		snprintf(path, sizeof(path), "%s/%s", top, e->d_name);
		snprintf(marker, sizeof(marker), "%s/passthrough.txt", path);
		if (kept || access(marker, F_OK) < 0)
			continue;
		if (nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0)
			kepler_info("VM %s is gone from the store: its tree is removed", e->d_name);
	}
	if (d)
		closedir(d);
}

/* Every VM of @snap written; the others' trees removed. */
static void publish(const struct kepler_config *cfg, const struct kepler_snapshot *snap, int *last_error)
{
	static char names[MAX_VMS][NAME_MAX_VM + 1];
	size_t n = kepler_workload_count(snap, KEPLER_KIND_VM), nnames = 0;
	int first = 0;

	for (size_t i = 0; i < n && nnames < MAX_VMS; i++) {
		struct kepler_workload vm = kepler_workload_at(snap, KEPLER_KIND_VM, i);
		char *name = names[nnames];
		int r;

		if (!safe_name(*vm.name ? vm.name : vm.id, name))
			continue;
		for (size_t k = 0; k < nnames; k++)
			if (!strcmp(names[k], name)) { /* two VMs of one name: this one by its id */
				safe_name(vm.id, name);
				break;
			}
		r = write_vm(cfg->passthrough.passthrough_dir, name, snap, &vm);
		if (r < 0 && !first) {
			first = r;
			if (r != *last_error)
				kepler_err("cannot write %s/%s: %s", cfg->passthrough.passthrough_dir, name,
					   strerror(-r));
		}
		nnames++;
	}
	*last_error = first;
	remove_gone(cfg->passthrough.passthrough_dir, names, nnames);
}

/* Open the store, waiting for it; NULL when stopped or on an error a retry cannot fix. */
static struct kepler_store *open_store(const char *path)
{
	struct kepler_error err = { 0 };
	struct kepler_store *s = NULL;
	int r, said = 0;

	while (!kepler_stop_signal) {
		r = kepler_store_open_reader(path, &s, &err);
		if (r == 0)
			return s;
		if (r == -EACCES || r == -EPROTONOSUPPORT || r == -ENOTDIR) {
			kepler_err("%s", err.msg);
			return NULL;
		}
		if (r != said)
			kepler_warn("waiting for the store: %s", err.msg);
		said = r;
		sleep(1);
	}
	return NULL;
}

static int run(const struct kepler_config *cfg)
{
	struct kepler_store *store = open_store(cfg->store_path);
	struct kepler_error err = { 0 };
	uint64_t seq = 0, newest;
	int last_error = 0;

	if (!store)
		return kepler_stop_signal ? 0 : 1;
	while (!kepler_stop_signal) {
		struct kepler_snapshot *snap = NULL;
		int r = kepler_store_wait(store, seq, SEC, &newest, &err);

		if (r == -ETIMEDOUT || r == -EINTR)
			continue;
		if (r == 0)
			r = kepler_store_read(store, 0, &snap, &err);
		if (r == -ESTALE || r == -EUCLEAN) {
			/* replaced: follow the new one; damaged: until the collector repairs or replaces it */
			if (r == -ESTALE)
				kepler_info("%s: following the new one", err.msg);
			else
				kepler_warn("%s; waiting for it to be repaired or replaced", err.msg);
			kepler_store_close(store);
			store = open_store(cfg->store_path);
			if (!store)
				return kepler_stop_signal ? 0 : 1;
			if (kepler_store_latest_seq(store, &newest, &err) < 0 || newest < seq)
				seq = 0; /* a new store counts from 1 again */
			continue;
		}
		if (r < 0) {
			kepler_err("%s", err.msg);
			kepler_store_close(store);
			return 1;
		}
		publish(cfg, snap, &last_error);
		seq = snap->seq;
		kepler_snapshot_free(snap);
	}
	kepler_store_close(store);
	return 0;
}

int main(int argc, char **argv)
{
	struct kepler_config cfg;
	int rc;

	kepler_config_parse_or_exit(&cfg, &kepler_program_passthrough, argc, argv);
	kepler_log_setup(kepler_program_passthrough.name, cfg.log_level, cfg.log_format);
	kepler_stop_on_signals();
	umask(022);
	if (make_dir(cfg.passthrough.passthrough_dir) < 0) {
		kepler_err("cannot create %s: %s", cfg.passthrough.passthrough_dir, strerror(errno));
		kepler_config_done(&cfg);
		return 1;
	}
	kepler_info("following %s into %s: one powercap tree per VM", cfg.store_path,
		    cfg.passthrough.passthrough_dir);
	rc = run(&cfg);
	kepler_config_done(&cfg);
	return rc;
}
