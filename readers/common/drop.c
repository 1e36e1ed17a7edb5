// SPDX-License-Identifier: Apache-2.0
/*
 * No network-facing root: an exporter started as root (to bind a low port,
 * to read a root-only TLS key) becomes exporter.user once it has done so,
 * and kepler-push push.user once it has read its keys and credentials,
 * keeping as its one supplementary group the store's (see store_group()),
 * with no capability left and no_new_privs set (on every thread: it is set
 * before the server's threads start). A user that does not exist, or root,
 * is refused.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kepler/log.h"

#include "drop.h"

/*
 * The store's group: its directory's; before the collector has made it, the
 * group of the directory it will appear in (the packaged one, made by
 * tmpfiles.d, always exists: 0750 root:kepler); else 'kepler'. Never root's:
 * the network-facing process would read every file of group root on the
 * host (a store in group root is readable by root alone, then, and said).
 */
static gid_t store_group(const char *store_path, bool *found)
{
	char parent[4096], *slash;
	struct stat st;
	struct group *g;

	*found = true;
	if (stat(store_path, &st) == 0 && st.st_gid != 0)
		return st.st_gid;
	if (stat(store_path, &st) == 0)
		kepler_warn(
			"the store %s is in group root: the exporter does not keep root's group, so it reads the "
			"store only if its own user or group may (give the store a group: store.group)",
			store_path);
	snprintf(parent, sizeof(parent), "%s", store_path);
	slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		if (stat(parent, &st) == 0 && st.st_gid != 0)
			return st.st_gid;
	}
	g = getgrnam("kepler");
	if (g)
		return g->gr_gid;
	*found = false;
	return 0;
}

/* Who is dropping, by the option that names its user (exporter.user, push.user). */
static const char *who(const char *key)
{
	return strncmp(key, "push.", 5) ? "exporter" : "pusher";
}

static const char *what(const char *key)
{
	return strncmp(key, "push.", 5) ? "serve the network" : "talk to the network";
}

int kepler_reader_drop_root(const char *key, const char *user, const char *store_path,
			    struct kepler_error *err)
{
	struct passwd *pw;
	gid_t groups[1];
	bool have_group;
	char data[4200];
	struct stat st;

	if (geteuid() != 0)
		return 0;
	pw = user && *user ? getpwnam(user) : NULL;
	if (!pw)
		return kepler_error_set(
			err, -ENOENT,
			"started as root, and %s '%s' does not exist: the %s refuses to %s as root; "
			"create the user or name another",
			key, user ? user : "", who(key), what(key));
	if (pw->pw_uid == 0)
		return kepler_error_set(err, -EPERM, "%s '%s' is root: the %s does not %s as root", key, user,
					who(key), what(key));
	snprintf(data, sizeof(data), "%s/data.mdb", store_path);
	if (stat(data, &st) == 0 && st.st_uid == pw->pw_uid)
		return kepler_error_set(
			err, -EPERM,
			"%s '%s' owns the store (%s): a network-facing process must not own it "
			"(it could change or remove it); run the collector as a user of its own (collector.user) "
			"or name another %s",
			key, user, data, key);
	groups[0] = store_group(store_path, &have_group);
	if (setgroups(have_group ? 1 : 0, groups) < 0 || setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
		return kepler_error_set(err, -errno, "cannot become %s: %s", user, strerror(errno));
	if (setuid(0) == 0) /* must fail now */
		return kepler_error_set(err, -EPERM, "still able to become root after switching to %s", user);
	return 1;
}

int kepler_reader_no_new_privs(struct kepler_error *err)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return kepler_error_set(err, -errno, "cannot set no_new_privs: %s", strerror(errno));
	return 0;
}
