// SPDX-License-Identifier: Apache-2.0
/*
 * Secret files (common/secret.c): a planted link, a FIFO, a folder, a file
 * others may read or another user owns are refused with the file named; a
 * Kubernetes Secret volume's layout is followed; a token is its first line,
 * without the line end; empty, over-long and NUL-holding lines are refused.
 * Ownership is checked as root where the test runs as root (chown), else
 * with the running user as the allowed owner.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "kepler/secret.h"

static char dir[PATH_MAX];

static void path_of(char *buf, const char *name)
{
	snprintf(buf, PATH_MAX, "%s/%s", dir, name);
}

static void write_file(const char *name, const char *text, size_t len, mode_t mode)
{
	char p[PATH_MAX];
	int fd;

	path_of(p, name);
	unlink(p);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/kepler-test-secret-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The line read from @name, or NULL with the error in @err. */
static char *line_of(const char *name, size_t max, struct kepler_error *err)
{
	char p[PATH_MAX], *line = NULL;

	path_of(p, name);
	kepler_error_clear(err);
	return kepler_secret_read_line("test.token-file", p, geteuid(), max, &line, err) == 0 ? line : NULL;
}

static void test_first_line_without_its_end(void **state)
{
	struct kepler_error err;
	char *s;

	(void)state;
	write_file("a", "s3cret\nsecond line\n", 19, 0600);
	assert_non_null(s = line_of("a", 64, &err));
	assert_string_equal(s, "s3cret");
	free(s);
	write_file("b", "crlf\r\nmore", 10, 0640);
	assert_non_null(s = line_of("b", 64, &err));
	assert_string_equal(s, "crlf");
	free(s);
	write_file("c", "no-newline", 10, 0400);
	assert_non_null(s = line_of("c", 10, &err));
	assert_string_equal(s, "no-newline");
	free(s);
}

static void test_bad_lines_refused(void **state)
{
	struct kepler_error err;

	(void)state;
	write_file("empty", "", 0, 0600);
	assert_null(line_of("empty", 64, &err));
	assert_int_equal(err.code, -ENODATA);
	assert_non_null(strstr(err.msg, "/empty is empty: refused"));
	write_file("blank", "\nsecond", 7, 0600);
	assert_null(line_of("blank", 64, &err));
	assert_int_equal(err.code, -ENODATA);
	assert_non_null(strstr(err.msg, "its first line is empty"));
	write_file("long", "0123456789a\n", 12, 0600);
	assert_null(line_of("long", 10, &err));
	assert_int_equal(err.code, -E2BIG);
	assert_non_null(strstr(err.msg, "longer than 10 bytes"));
	write_file("nul", "ab\0cd\n", 6, 0600);
	assert_null(line_of("nul", 64, &err));
	assert_int_equal(err.code, -EINVAL);
}

static void test_others_may_read_refused(void **state)
{
	struct kepler_error err;

	(void)state;
	write_file("open", "tok\n", 4, 0644);
	assert_null(line_of("open", 64, &err));
	assert_int_equal(err.code, -EPERM);
	assert_non_null(strstr(err.msg, "/open may be read by others (mode 0644)"));
	write_file("writable", "tok\n", 4, 0602);
	assert_null(line_of("writable", 64, &err));
	assert_int_equal(err.code, -EPERM);
}

static void test_planted_link_refused(void **state)
{
	char p[PATH_MAX], target[PATH_MAX];
	struct kepler_error err;

	(void)state;
	write_file("real", "tok\n", 4, 0600);
	path_of(p, "link");
	path_of(target, "real");
	assert_int_equal(symlink(target, p), 0); /* even to a file that passes every other rule */
	assert_null(line_of("link", 64, &err));
	assert_int_equal(err.code, -ELOOP);
	assert_non_null(strstr(err.msg, "/link is a symbolic link (to "));
	path_of(p, "shadow");
	assert_int_equal(symlink("/etc/shadow", p), 0);
	assert_null(line_of("shadow", 64, &err));
	assert_int_equal(err.code, -ELOOP);
	assert_non_null(strstr(err.msg, "(to /etc/shadow)"));
	/* the Kubernetes shape, but the target is not ..data/NAME */
	path_of(p, "sneaky");
	assert_int_equal(symlink("..data/real", p), 0);
	assert_null(line_of("sneaky", 64, &err));
	assert_int_equal(err.code, -ELOOP);
}

static void test_kubernetes_volume_followed(void **state)
{
	char p[PATH_MAX], q[PATH_MAX];
	struct kepler_error err;
	char *s;

	(void)state;
	/* as the kubelet's atomic writer lays a Secret out: token -> ..data/token, ..data -> ..2026_11_29 */
	path_of(p, "..2026_11_29_05_00_00.1");
	assert_int_equal(mkdir(p, 0755), 0);
	write_file("..2026_11_29_05_00_00.1/token", "eyJhbGciOi.jwt\n", 15, 0640);
	path_of(p, "..data");
	assert_int_equal(symlink("..2026_11_29_05_00_00.1", p), 0);
	path_of(p, "token");
	assert_int_equal(symlink("..data/token", p), 0);
	assert_non_null(s = line_of("token", 64, &err));
	assert_string_equal(s, "eyJhbGciOi.jwt");
	free(s);
	/* the same rules inside: the file others may read is refused */
	path_of(q, "..2026_11_29_05_00_00.1/token");
	assert_int_equal(chmod(q, 0644), 0);
	assert_null(line_of("token", 64, &err));
	assert_int_equal(err.code, -EPERM);
	assert_int_equal(chmod(q, 0640), 0);
	/* a folder others may write (not sticky): someone else may have made the links */
	assert_int_equal(chmod(dir, 0777), 0);
	assert_null(line_of("token", 64, &err));
	assert_int_equal(err.code, -ELOOP);
	assert_int_equal(chmod(dir, 01777),
			 0); /* the sticky tmpfs the kubelet mounts: only owners replace links */
	assert_non_null(s = line_of("token", 64, &err));
	free(s);
	assert_int_equal(chmod(dir, 0700), 0);
}

static void test_not_a_regular_file_refused(void **state)
{
	char p[PATH_MAX];
	struct kepler_error err;

	(void)state;
	path_of(p, "fifo");
	assert_int_equal(mkfifo(p, 0600), 0); /* refused at once, not waited on */
	assert_null(line_of("fifo", 64, &err));
	assert_int_equal(err.code, -EINVAL);
	assert_non_null(strstr(err.msg, "is not a regular file"));
	path_of(p, "folder");
	assert_int_equal(mkdir(p, 0700), 0);
	assert_null(line_of("folder", 64, &err));
	assert_int_equal(err.code, -EINVAL);
	assert_null(line_of("missing", 64, &err));
	assert_int_equal(err.code, -ENOENT);
	assert_non_null(strstr(err.msg, "test.token-file"));
}

static void test_owner(void **state)
{
	char p[PATH_MAX], *buf = NULL;
	struct kepler_error err;
	size_t len;

	(void)state;
	write_file("owned", "key material", 12, 0600);
	path_of(p, "owned");
	if (geteuid() != 0) { /* as another user: the running user is allowed, root-only is not */
		assert_int_equal(kepler_secret_read("k", p, geteuid(), 64, &buf, &len, &err), 0);
		free(buf);
		assert_int_equal(kepler_secret_read("k", p, KEPLER_SECRET_ROOT_ONLY, 64, &buf, &len, &err),
				 -EPERM);
		return;
	}
	assert_int_equal(chown(p, 4242, 4242), 0);
	assert_int_equal(kepler_secret_read("k", p, 4242, 64, &buf, &len, &err), 0); /* the dropped user's */
	assert_int_equal(len, 12);
	assert_memory_equal(buf, "key material", 12);
	free(buf);
	assert_int_equal(kepler_secret_read("k", p, 65534, 64, &buf, &len, &err), -EPERM);
	assert_non_null(strstr(err.msg, "owned by uid 4242: refused (only root or uid 65534"));
	assert_int_equal(kepler_secret_read("k", p, KEPLER_SECRET_ROOT_ONLY, 64, &buf, &len, &err), -EPERM);
	assert_int_equal(kepler_secret_read("k", p, 4242, 11, &buf, &len, &err), -EFBIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_first_line_without_its_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_lines_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_others_may_read_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_planted_link_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kubernetes_volume_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_a_regular_file_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner, setup, teardown),
	};

	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
