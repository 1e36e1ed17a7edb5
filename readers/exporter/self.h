/* SPDX-License-Identifier: Apache-2.0 */
/* readers/exporter/self.h: the exporter's own process figures (process_* families). */
#ifndef KEPLER_EXPORTER_SELF_H
#define KEPLER_EXPORTER_SELF_H

#include "kepler/fmt.h"

/* Fill @st from /proc/self; -1 (and zeros) when it cannot be read. */
int kepler_self_stats(struct kepler_process_stats *st);

#endif /* KEPLER_EXPORTER_SELF_H */
