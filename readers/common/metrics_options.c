// SPDX-License-Identifier: Apache-2.0
/* The metrics.* options as the exposition's options (metrics_options.h). */
#include "metrics_options.h"

void kepler_reader_metrics_options(struct kepler_prom_options *opts, const struct kepler_config *cfg)
{
	opts->levels = kepler_levels_from_list(&cfg->metrics.metrics_level);
	opts->zones = &cfg->metrics.metrics_zones;
	opts->process_top = (size_t)cfg->metrics.metrics_process_top;
	opts->process_fold = cfg->metrics.metrics_process_fold;
	opts->container_top = (size_t)cfg->metrics.metrics_container_top;
}
