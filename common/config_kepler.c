// SPDX-License-Identifier: Apache-2.0
/*
 * Kepler's configuration at the door: the keys of Kepler's ConfigMap
 * (camelCase, `monitor.maxTerminated`, `exporter.prometheus.metricsLevel`,
 * `kube.nodeName`) and the flags of Kepler's DaemonSet (`--config.file`,
 * `--kube.enable`, `--kube.node-name`, `--metrics`), each mapped to its
 * kepler-c option, or accepted with one warning naming it when kepler-c has
 * no counterpart. An operator swaps the image and keeps the config; keys
 * that are neither Kepler's nor kepler-c's stay errors.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

/*
 * Kepler's keys and flags, from its config/config.go (v0.11). @flag is
 * Kepler's flag name, NULL when it has none; @target the kepler-c option,
 * NULL for none (then @why says what to do instead).
 */
static const struct kepler_compat compat[] = {
	{ "log.level", "log.level", "log.level", KEPLER_COMPAT_SAME, true, NULL },
	{ "log.format", "log.format", "log.format", KEPLER_COMPAT_SAME, true, NULL },
	{ "host.sysfs", "host.sysfs", "host.sysfs", KEPLER_COMPAT_SAME, true, NULL },
	{ "host.procfs", "host.procfs", "host.procfs", KEPLER_COMPAT_SAME, true, NULL },
	{ "monitor.interval", "monitor.interval", "monitor.interval", KEPLER_COMPAT_SAME, true, NULL },
	{ "monitor.staleness", NULL, NULL, KEPLER_COMPAT_SAME, true,
	  "snapshots are built every interval and read from the store, never on demand" },
	{ "monitor.maxTerminated", "monitor.max-terminated", "monitor.max-terminated", KEPLER_COMPAT_SAME,
	  true, NULL },
	{ "monitor.minTerminatedEnergyThreshold", NULL, "monitor.min-terminated-energy", KEPLER_COMPAT_SAME,
	  true, NULL },
	{ "cpu.preferredMeters", NULL, NULL, KEPLER_COMPAT_SAME, true,
	  "use meter.source (auto tries rapl, then hwmon, then a power model)" },
	{ "rapl.zones", NULL, "rapl.zones", KEPLER_COMPAT_SAME, true, NULL },
	{ "exporter.stdout.enabled", "exporter.stdout", NULL, KEPLER_COMPAT_SAME, false,
	  "run kepler-stdout, a reader of its own" },
	{ "exporter.prometheus.enabled", "exporter.prometheus", NULL, KEPLER_COMPAT_SAME, false,
	  "kepler-exporter is a process of its own: run it or not" },
	{ "exporter.prometheus.debugCollectors", NULL, NULL, KEPLER_COMPAT_SAME, true,
	  "kepler-exporter always exports its process_* metrics; there is no Go runtime" },
	{ "exporter.prometheus.metricsLevel", "metrics", "metrics.level", KEPLER_COMPAT_LEVELS, true, NULL },
	{ "web.configFile", "web.config-file", "web.config-file", KEPLER_COMPAT_SAME, true, NULL },
	{ "web.listenAddresses", "web.listen-address", "web.listen-address", KEPLER_COMPAT_FIRST, true,
	  NULL },
	{ "debug.pprof.enabled", "debug.pprof", NULL, KEPLER_COMPAT_SAME, false, "there is no pprof in C" },
	{ "kube.enabled", "kube.enable", "kube.enabled", KEPLER_COMPAT_SAME, false, NULL },
	{ "kube.config", "kube.config", NULL, KEPLER_COMPAT_SAME, true,
	  "names come from the kubelet or its log links, never the API server (see kube.pod-source)" },
	{ "kube.nodeName", "kube.node-name", "kube.node-name", KEPLER_COMPAT_SAME, true, NULL },
	{ "kube.podInformer.mode", NULL, "kube.pod-source", KEPLER_COMPAT_POD_MODE, true, NULL },
	{ "kube.podInformer.pollInterval", NULL, "kube.poll-interval", KEPLER_COMPAT_SAME, true, NULL },
	{ "dev.fake-cpu-meter.enabled", NULL, "meter.source", KEPLER_COMPAT_FAKE, true, NULL },
	{ "dev.fake-cpu-meter.zones", NULL, "dev.fake-meter.zones", KEPLER_COMPAT_NONEMPTY, true, NULL },
	{ "experimental.platform.redfish.enabled", "experimental.platform.redfish.enabled",
	  "platform.redfish.enabled", KEPLER_COMPAT_SAME, false, NULL },
	{ "experimental.platform.redfish.nodeName", "experimental.platform.redfish.node-name",
	  "platform.redfish.node-name", KEPLER_COMPAT_SAME, true, NULL },
	{ "experimental.platform.redfish.configFile", "experimental.platform.redfish.config-file",
	  "platform.redfish.config-file", KEPLER_COMPAT_SAME, true, NULL },
	{ "experimental.platform.redfish.httpTimeout", NULL, "platform.redfish.http-timeout",
	  KEPLER_COMPAT_SAME, true, NULL },
	{ "experimental.hwmon.forceEnabled", "experimental.hwmon.force-enabled", NULL, KEPLER_COMPAT_SAME,
	  false, "hwmon power meters are used under meter.source auto or hwmon (see hwmon.chips)" },
	{ "experimental.hwmon.zones", "experimental.hwmon.zones", NULL, KEPLER_COMPAT_SAME, true,
	  "see hwmon.chips" },
	{ "experimental.hwmon.chipRules", NULL, NULL, KEPLER_COMPAT_SAME, true, "see hwmon.chips" },
	{ "experimental.gpu.enabled", "experimental.gpu.enabled", "gpu.enabled", KEPLER_COMPAT_SAME, false,
	  NULL },
	{ "experimental.gpu.idlePower", "experimental.gpu.idle-power", "gpu.idle-power", KEPLER_COMPAT_SAME,
	  true, NULL },
	{ "experimental.gpu.dcgmEndpoint", "experimental.gpu.dcgm-endpoint", NULL, KEPLER_COMPAT_SAME, true,
	  "MIG GPU instances are not split through dcgm-exporter: a MIG GPU's energy is split equally over its processes" },
	{ NULL, NULL, NULL, 0, false, NULL },
};

const struct kepler_compat *kepler_compat_find_key(const char *key)
{
	for (const struct kepler_compat *c = compat; c->key; c++)
		if (!strcmp(c->key, key))
			return c;
	return NULL;
}

const struct kepler_compat *kepler_compat_find_flag(const char *flag)
{
	for (const struct kepler_compat *c = compat; c->key; c++)
		if (c->flag && !strcmp(c->flag, flag))
			return c;
	return NULL;
}

bool kepler_compat_is_section(const char *key)
{
	size_t len = strlen(key);

	for (const struct kepler_compat *c = compat; c->key; c++)
		if (!strncmp(c->key, key, len) && c->key[len] == '.')
			return true;
	return false;
}

int kepler_config_warn(struct kepler_config *cfg, struct kepler_error *err, const char *fmt, ...)
{
	char msg[512], **w;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < cfg->warnings.count; i++)
		if (!strcmp(cfg->warnings.items[i], msg))
			return 0; /* once */
	w = realloc(cfg->warnings.items, (cfg->warnings.count + 1) * sizeof(*w));
	if (!w)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	cfg->warnings.items = w;
	if (!(w[cfg->warnings.count] = strdup(msg)))
		return kepler_error_set(err, -ENOMEM, "out of memory");
	cfg->warnings.count++;
	return 0;
}

int kepler_compat_ignored(struct kepler_config *cfg, const struct kepler_compat *c, const char *as,
			  const char *where, struct kepler_error *err)
{
	bool flag = !strcmp(as, "flag");

	return kepler_config_warn(
		cfg, err, "Kepler's %s '%s%s'%s%s has no kepler-c counterpart and is ignored: %s", as,
		flag ? "--" : "", flag ? c->flag : c->key, where[0] ? " " : "", where, c->why);
}

static const char *const all_levels[] = { "node", "process", "container", "vm", "pod" };

int kepler_compat_set_scalar(struct kepler_config *cfg, const struct kepler_compat *c, const char *value,
			     unsigned prog, const char *origin, struct kepler_error *err)
{
	const struct kepler_option *o = kepler_option_find(c->target, 0, true);

	if (!o)
		return kepler_error_set(err, -EINVAL, "%s: no option %s (a bug)", origin, c->target);
	if (prog && !(o->progs & prog))
		return 0; /* understood, but for another kepler-c program (one file serves them all) */
	switch (c->transform) {
	case KEPLER_COMPAT_LEVELS:
		if (!strcmp(value, "all"))
			return kepler_config_set_list(o, cfg, all_levels, 5, origin, err);
		break;
	case KEPLER_COMPAT_FAKE:
		if (!strcmp(value, "true"))
			return kepler_config_set_value(o, cfg, "fake", origin, err);
		if (!strcmp(value, "false"))
			return 0;
		return kepler_error_set(err, -EINVAL, "invalid value for %s: expected true or false", origin);
	case KEPLER_COMPAT_POD_MODE:
		/*
		 * Kepler finds its kubelet through the API server, which kepler-c
		 * does not use: auto takes the kubelet when its URL (HOST_IP) and
		 * a token are there, else the log links.
		 */
		if (!strcmp(value, "kubelet"))
			return kepler_config_set_value(o, cfg, "auto", origin, err);
		return kepler_config_warn(
			cfg, err,
			"Kepler's kube.podInformer.mode '%s' %s is not available: names come "
			"from kube.pod-source (auto: the kubelet, else its log links)",
			value, origin);
	default: break;
	}
	return kepler_config_set_value(o, cfg, value, origin, err);
}

int kepler_compat_set_list(struct kepler_config *cfg, const struct kepler_compat *c, const char *const *items,
			   size_t n, unsigned prog, const char *origin, struct kepler_error *err)
{
	const struct kepler_option *o = kepler_option_find(c->target, 0, true);
	int r;

	if (!o)
		return kepler_error_set(err, -EINVAL, "%s: no option %s (a bug)", origin, c->target);
	if (prog && !(o->progs & prog))
		return 0;
	if (c->transform == KEPLER_COMPAT_NONEMPTY && n == 0)
		return 0; /* Kepler's [] means its default */
	if (c->transform == KEPLER_COMPAT_FIRST) {
		if (n == 0)
			return 0;
		r = kepler_config_set_value(o, cfg, items[0], origin, err);
		if (r == 0 && n > 1)
			r = kepler_config_warn(
				cfg, err, "%s lists %zu addresses; kepler-exporter listens on the first, %s",
				origin, n, items[0]);
		return r;
	}
	if (o->type != KEPLER_OPT_LIST)
		return kepler_error_set(err, -EINVAL,
					"invalid value for %s: expected a single value, not a list", origin);
	return kepler_config_set_list(o, cfg, items, n, origin, err);
}
