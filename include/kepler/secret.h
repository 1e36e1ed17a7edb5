/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Secret files: bearer tokens, passwords, private keys, files of users. One
 * set of rules for every binary that reads one, so that a planted link or a
 * file others can read never leaks a secret to a peer (issue 60).
 */
#ifndef KEPLER_SECRET_H
#define KEPLER_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "kepler/error.h"

/* No owner but root. */
#define KEPLER_SECRET_ROOT_ONLY ((uid_t)-1)

/*
 * Read the secret file @path (@what names it in messages: the option) into a
 * new NUL-terminated buffer, *@ret (*@ret_len bytes, not counting the NUL).
 * Refused, naming the file and the reason, unless:
 *   - its last component is not a symbolic link (opened with O_NOFOLLOW); the
 *     one link followed is the layout of a Kubernetes Secret or projected
 *     volume (NAME -> ..data/NAME, ..data a link, both owned by root or @owner,
 *     in a folder that others cannot write or that is sticky);
 *   - it is a regular file (not a FIFO, a device, a folder), owned by root or
 *     by @owner (the user the process runs as after it drops root);
 *   - others may not read nor write it (mode & 0007 == 0);
 *   - it holds at least one byte and at most @max.
 * Returns 0, or -ELOOP (a link), -EINVAL (not a regular file), -EPERM (owner,
 * mode), -ENODATA (empty), -EFBIG (larger than @max), -ENOMEM or the open's
 * -errno.
 */
int kepler_secret_read(const char *what, const char *path, uid_t owner, size_t max, char **ret,
		       size_t *ret_len, struct kepler_error *err);

/*
 * Who besides root may own the secret files of a process that, started as
 * root, becomes @drop_user: that user's uid (KEPLER_SECRET_ROOT_ONLY when it
 * does not exist: the drop refuses it later). Not started as root: the
 * running user.
 */
uid_t kepler_secret_owner(const char *drop_user);

/*
 * A one-line secret (a token, a password): the file's first line, without its
 * line end ("\n" or "\r\n"), as a new string. The file is read under
 * kepler_secret_read's rules; the line is also refused when empty (-ENODATA)
 * or longer than @max (-E2BIG). What follows the first line is ignored.
 */
int kepler_secret_read_line(const char *what, const char *path, uid_t owner, size_t max, char **ret,
			    struct kepler_error *err);

#endif
