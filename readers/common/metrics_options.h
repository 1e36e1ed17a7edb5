/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/common/metrics_options.h: the metrics.* options as the
 * exposition's options, one mapping for the exporter and kepler-push, so
 * that both serve the same families and labels.
 */
#ifndef KEPLER_READERS_METRICS_OPTIONS_H
#define KEPLER_READERS_METRICS_OPTIONS_H

#include "kepler/config.h"
#include "kepler/fmt.h"

/*
 * @opts from @cfg's metrics.level, metrics.zones, metrics.process-top,
 * metrics.process-fold and metrics.container-top (borrowed: @cfg outlives
 * @opts). What the caller adds (the CPU list) is left as it was.
 */
void kepler_reader_metrics_options(struct kepler_prom_options *opts, const struct kepler_config *cfg);

#endif /* KEPLER_READERS_METRICS_OPTIONS_H */
