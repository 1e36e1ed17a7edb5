// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for the Kubernetes names the collector reads, all of it
 * untrusted (a compromised kubelet, a writer of the log directory): the
 * first byte picks the parser, the rest is its input.
 *   0 a kubelet /pods answer (a PodList, JSON)
 *   1 kubelet log links: lines "NAME\tTARGET", each added, then sorted
 * Parsing may fail; it must never crash, leak or read out of bounds, and
 * what is stored must follow the rules: 64-hex ids, valid pod indexes,
 * terminated names, every container found again by its id; owners of
 * valid kinds and names; labels text of the keys asked for, each value
 * valid (it holds no ',' nor '=': readers split it there).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube_names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct kepler_kube_names *t)
{
	for (size_t i = 0; i < t->ncontainers; i++) {
		const struct kepler_kube_container *c = &t->containers[i];

		if (strlen(c->id) != KEPLER_CONTAINER_ID_LEN || c->pod >= t->npods || !c->name[0] ||
		    strlen(c->name) > KEPLER_KUBE_LABEL_MAX || kepler_kube_names_container(t, c->id) != c)
			abort();
	}
	for (size_t i = 0; i < t->npods; i++) {
		const struct kepler_kube_pod *p = &t->pods[i];

		if (strlen(p->name) > KEPLER_KUBE_NAME_MAX || strlen(p->ns) > KEPLER_KUBE_LABEL_MAX ||
		    (p->uid[0] &&
		     (strlen(p->uid) != KEPLER_POD_UID_LEN || !kepler_kube_names_pod(t, p->uid))) ||
		    !p->owner_kind[0] != !p->owner_name[0] || strlen(p->labels) > KEPLER_KUBE_LABELS_TEXT_MAX)
			abort();
		for (const char *l = p->labels; *l;) { /* KEY=VALUE, each valid */
			const char *end = strchr(l, ','), *eq;

			if (!end)
				end = l + strlen(l);
			eq = memchr(l, '=', (size_t)(end - l));
			if (!eq || !kepler_label_key_valid(l, (size_t)(eq - l)) ||
			    !kepler_label_value_valid(eq + 1, (size_t)(end - eq - 1)))
				abort();
			l = *end ? end + 1 : end;
		}
	}
}

static void log_links(struct kepler_kube_names *t, const char *text, size_t len)
{
	char *copy = malloc(len + 1), *line, *save = NULL;

	if (!copy)
		return;
	memcpy(copy, text, len);
	copy[len] = '\0';
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');

		if (tab)
			*tab++ = '\0';
		if (kepler_kube_names_add_log_link(t, line, tab) < 0)
			break;
	}
	kepler_kube_names_sort(t);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kepler_kube_names *t;
	struct kepler_error err;

	static const char *const keys[] = { "team", "app.kubernetes.io/name", "pod-template-hash" };

	if (size < 1 || !(t = kepler_kube_names_new()))
		return 0;
	t->label_keys = keys;
	t->nlabel_keys = 3;
	if (data[0] == 0)
		kepler_kube_names_parse_podlist(t, (const char *)data + 1, size - 1, &err);
	else
		log_links(t, (const char *)data + 1, size - 1);
	check(t);
	kepler_kube_names_free(t);
	return 0;
}
