/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/carbon/intensity_out.h: the file kepler-carbon keeps (the
 * collector's carbon.intensity-file, kepler/carbon.h's format): read at
 * start, merged with each answer, written whole and atomically.
 */
#ifndef KEPLER_CARBON_INTENSITY_OUT_H
#define KEPLER_CARBON_INTENSITY_OUT_H

#include <stddef.h>

#include "kepler/carbon.h"
#include "kepler/error.h"
#include "providers.h"

/*
 * The file's lines in *@ret (empty when it does not exist). A file that does
 * not parse is renamed PATH.damaged (kept to inspect, said) and *@ret is
 * empty. -errno of a read that failed otherwise.
 */
int carbon_out_load(const char *path, struct kepler_carbon *ret, struct kepler_error *err);

/*
 * Merge @in into @c: a value at a time already there replaces it (a
 * forecast becomes the measurement), times stay ascending, and only the
 * newest @keep are kept. *@ret_changed: whether anything changed. -ENOMEM.
 */
int carbon_out_merge(struct kepler_carbon *c, const struct carbon_values *in, size_t keep, int *ret_changed);

/*
 * Write @c to @path: a new file beside it (0644, O_EXCL, not through a link)
 * synced, then renamed over it, then the folder synced: a reader sees the
 * old file or the new one, whole. -errno with the file named.
 */
int carbon_out_write(const char *path, const struct kepler_carbon *c, struct kepler_error *err);

#endif /* KEPLER_CARBON_INTENSITY_OUT_H */
