// SPDX-License-Identifier: Apache-2.0
/*
 * The names of a node's Kubernetes containers, from the kubelet's PodList
 * (parsed with json-c) or its log symlinks. See kube_names.h.
 */

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "kepler/array.h"
#include "json_budget.h"
#include "kube_names.h"

/* Nesting a PodList needs (items[].status.containerStatuses[].state...) with room; more is refused. */
#define PODLIST_MAX_DEPTH 24

struct kepler_kube_names *kepler_kube_names_new(void)
{
	return calloc(1, sizeof(struct kepler_kube_names));
}

void kepler_kube_names_free(struct kepler_kube_names *t)
{
	if (!t)
		return;
	free(t->pods);
	free(t->containers);
	free(t);
}

/* ---- the rules Kubernetes names follow ---- */

static bool is_alnum_lower(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_hex_lower(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* A DNS-1123 label (namespaces, container names) or, with @dots, subdomain (pod names). */
static bool dns1123(const char *s, size_t n, size_t max, bool dots)
{
	if (n == 0 || n > max || !is_alnum_lower(s[0]) || !is_alnum_lower(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum_lower(s[i]) && s[i] != '-' && !(dots && s[i] == '.'))
			return false;
	return true;
}

static bool valid_uid(const char *s, size_t n)
{
	if (n != KEPLER_POD_UID_LEN)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !is_hex_lower(s[i]))
			return false;
	}
	return true;
}

static bool valid_id(const char *s, size_t n)
{
	if (n != KEPLER_CONTAINER_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_hex_lower(s[i]))
			return false;
	return true;
}

bool kepler_kube_parse_cpu(const char *s, size_t len, uint32_t *ret_mcpu)
{
	uint64_t whole = 0, frac = 0, scale = 1000;
	size_t i = 0;
	bool digits = false;

	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits = true)
		if ((whole = whole * 10 + (uint64_t)(s[i] - '0')) > 4000000)
			return false;
	if (i < len && s[i] == 'm') { /* millicores: an integer only */
		if (!digits || i + 1 != len)
			return false;
		*ret_mcpu = (uint32_t)whole;
		return true;
	}
	if (i < len && s[i] == '.') {
		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits = true)
			if (scale > 1) { /* below a millicore is dropped, as Kubernetes rounds up to 1m */
				scale /= 10;
				frac += (uint64_t)(s[i] - '0') * scale;
			}
	}
	if (!digits || i != len || whole * 1000 + frac > UINT32_MAX)
		return false;
	*ret_mcpu = (uint32_t)(whole * 1000 + frac);
	return true;
}

/* Append a pod (strings already checked). Its index, or a negative errno. */
static long add_pod(struct kepler_kube_names *t, const char *uid, const char *name, size_t name_len,
		    const char *ns, size_t ns_len)
{
	struct kepler_kube_pod *p;
	int r = kepler_array_reserve_max((void **)&t->pods, &t->pods_cap, t->npods + 1, sizeof(*t->pods),
					 KEPLER_KUBE_MAX_PODS);

	if (r < 0)
		return r;
	p = &t->pods[t->npods];
	memset(p, 0, sizeof(*p));
	if (uid)
		memcpy(p->uid, uid, KEPLER_POD_UID_LEN);
	memcpy(p->name, name, name_len);
	memcpy(p->ns, ns, ns_len);
	return (long)t->npods++;
}

static int add_container(struct kepler_kube_names *t, const char *id, const char *name, size_t name_len,
			 size_t pod, uint32_t mcpu)
{
	struct kepler_kube_container *c;
	int r = kepler_array_reserve_max((void **)&t->containers, &t->containers_cap, t->ncontainers + 1,
					 sizeof(*t->containers), KEPLER_KUBE_MAX_CONTAINERS);

	if (r < 0)
		return r;
	c = &t->containers[t->ncontainers++];
	memset(c, 0, sizeof(*c));
	memcpy(c->id, id, KEPLER_CONTAINER_ID_LEN);
	memcpy(c->name, name, name_len);
	c->pod = (uint32_t)pod;
	c->cpu_request_mcpu = mcpu;
	return 0;
}

/* ---- the kubelet's PodList ---- */

/* The string member @key of @obj, or NULL (absent, or not a string). */
static const char *member_str(struct json_object *obj, const char *key, size_t *len)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	*len = (size_t)json_object_get_string_len(v);
	return json_object_get_string(v);
}

static struct json_object *member_of_type(struct json_object *obj, const char *key, enum json_type type)
{
	struct json_object *v;

	if (!obj || !json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, type))
		return NULL;
	return v;
}

/* The CPU request of the spec container named @name (containers, then initContainers). */
static uint32_t spec_cpu_request(struct json_object *spec, const char *name, size_t name_len)
{
	static const char *const lists[] = { "containers", "initContainers" };

	for (size_t l = 0; l < 2; l++) {
		struct json_object *arr = member_of_type(spec, lists[l], json_type_array);
		size_t n = arr ? json_object_array_length(arr) : 0;

		for (size_t i = 0; i < n; i++) {
			struct json_object *c = json_object_array_get_idx(arr, i), *req, *cpu;
			const char *cname;
			size_t clen;
			uint32_t mcpu;

			if (!json_object_is_type(c, json_type_object) ||
			    !(cname = member_str(c, "name", &clen)) || clen != name_len ||
			    memcmp(cname, name, clen))
				continue;
			req = member_of_type(member_of_type(c, "resources", json_type_object), "requests",
					     json_type_object);
			cpu = member_of_type(req, "cpu", json_type_string);
			if (cpu && kepler_kube_parse_cpu(json_object_get_string(cpu),
							 (size_t)json_object_get_string_len(cpu), &mcpu))
				return mcpu;
			return 0;
		}
	}
	return 0;
}

/*
 * One status entry: {"name": ..., "containerID": "<runtime>://<id>"}. A
 * container not started yet has no containerID: nothing to name, not an error.
 */
static int add_status(struct kepler_kube_names *t, struct json_object *st, struct json_object *spec,
		      size_t pod)
{
	const char *name, *cid, *sep;
	size_t nlen, clen;

	if (!json_object_is_type(st, json_type_object))
		goto skip;
	cid = member_str(st, "containerID", &clen);
	if (!cid || clen == 0)
		return 0;
	name = member_str(st, "name", &nlen);
	sep = memmem(cid, clen, "://", 3);
	if (!name || !dns1123(name, nlen, KEPLER_KUBE_LABEL_MAX, false) || !sep)
		goto skip;
	sep += 3;
	if (!valid_id(sep, clen - (size_t)(sep - cid)))
		goto skip;
	return add_container(t, sep, name, nlen, pod, spec_cpu_request(spec, name, nlen));
skip:
	t->skipped++;
	return 0;
}

/* ---- owners and labels ---- */

static bool valid_kind(const char *s, size_t n)
{
	if (n == 0 || n > KEPLER_KUBE_LABEL_MAX ||
	    !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

bool kepler_kube_owner_resolve(const char *kind, size_t kind_len, const char *name, size_t name_len,
			       const char *hash, size_t hash_len, char *ret_kind, char *ret_name)
{
	size_t keep = name_len, digits = 0;

	if (!valid_kind(kind, kind_len) || !dns1123(name, name_len, KEPLER_KUBE_NAME_MAX, true))
		return false;
	if (kind_len == 10 && !memcmp(kind, "ReplicaSet", 10) && hash && hash_len &&
	    hash_len + 1 < name_len && name[name_len - hash_len - 1] == '-' &&
	    !memcmp(name + name_len - hash_len, hash, hash_len)) {
		kind = "Deployment", kind_len = 10;
		keep = name_len - hash_len - 1;
	} else if (kind_len == 3 && !memcmp(kind, "Job", 3)) {
		while (digits < name_len && name[name_len - 1 - digits] >= '0' &&
		       name[name_len - 1 - digits] <= '9')
			digits++;
		if (digits >= 8 && digits + 1 < name_len && name[name_len - 1 - digits] == '-') {
			kind = "CronJob", kind_len = 7;
			keep = name_len - digits - 1;
		}
	}
	memcpy(ret_kind, kind, kind_len);
	ret_kind[kind_len] = 0;
	memcpy(ret_name, name, keep);
	ret_name[keep] = 0;
	return true;
}

/* The pod's controller: the ownerReference with "controller": true. */
static void pod_owner(struct kepler_kube_names *t, struct json_object *meta, struct kepler_kube_pod *p)
{
	struct json_object *refs = member_of_type(meta, "ownerReferences", json_type_array);
	struct json_object *labels = member_of_type(meta, "labels", json_type_object);
	size_t n = refs ? json_object_array_length(refs) : 0, klen = 0, nlen = 0, hlen = 0;
	const char *hash = labels ? member_str(labels, "pod-template-hash", &hlen) : NULL;

	for (size_t i = 0; i < n; i++) {
		struct json_object *ref = json_object_array_get_idx(refs, i);
		struct json_object *ctl = member_of_type(ref, "controller", json_type_boolean);
		const char *kind, *name;

		if (!ctl || !json_object_get_boolean(ctl))
			continue;
		kind = member_str(ref, "kind", &klen);
		name = member_str(ref, "name", &nlen);
		if (!kind || !name ||
		    !kepler_kube_owner_resolve(kind, klen, name, nlen, hash, hlen, p->owner_kind,
					       p->owner_name))
			t->skipped++;
		return;
	}
}

/* The labels asked for, "KEY=VALUE,..." in their order; a value that breaks the rules is skipped. */
static void pod_labels(struct kepler_kube_names *t, struct json_object *meta, struct kepler_kube_pod *p)
{
	struct json_object *labels = member_of_type(meta, "labels", json_type_object);
	size_t used = 0;

	for (size_t i = 0; labels && i < t->nlabel_keys && i < KEPLER_KUBE_POD_LABELS_MAX; i++) {
		const char *key = t->label_keys[i], *v;
		size_t klen = strlen(key), vlen;

		if (!(v = member_str(labels, key, &vlen)))
			continue;
		if (!kepler_label_key_valid(key, klen) || !kepler_label_value_valid(v, vlen) ||
		    used + klen + vlen + 2 > sizeof(p->labels)) {
			t->skipped++;
			continue;
		}
		if (used)
			p->labels[used++] = ',';
		memcpy(p->labels + used, key, klen);
		used += klen;
		p->labels[used++] = '=';
		memcpy(p->labels + used, v, vlen);
		used += vlen;
		p->labels[used] = 0;
	}
}

static int add_pod_item(struct kepler_kube_names *t, struct json_object *item)
{
	static const char *const statuses[] = { "containerStatuses", "initContainerStatuses",
						"ephemeralContainerStatuses" };
	struct json_object *meta = member_of_type(item, "metadata", json_type_object);
	struct json_object *spec = member_of_type(item, "spec", json_type_object);
	struct json_object *status = member_of_type(item, "status", json_type_object);
	const char *name = NULL, *ns = NULL, *uid = NULL;
	size_t nlen = 0, nslen = 0, ulen = 0;
	long pod;

	if (meta) {
		name = member_str(meta, "name", &nlen);
		ns = member_str(meta, "namespace", &nslen);
		uid = member_str(meta, "uid", &ulen);
	}
	if (!name || !ns || !uid || !dns1123(name, nlen, KEPLER_KUBE_NAME_MAX, true) ||
	    !dns1123(ns, nslen, KEPLER_KUBE_LABEL_MAX, false) || !valid_uid(uid, ulen)) {
		t->skipped++;
		return 0;
	}
	pod = add_pod(t, uid, name, nlen, ns, nslen);
	if (pod < 0)
		return (int)pod;
	pod_owner(t, meta, &t->pods[pod]);
	pod_labels(t, meta, &t->pods[pod]);
	for (size_t s = 0; s < 3; s++) {
		struct json_object *arr = member_of_type(status, statuses[s], json_type_array);
		size_t n = arr ? json_object_array_length(arr) : 0;

		for (size_t i = 0; i < n; i++) {
			int r = add_status(t, json_object_array_get_idx(arr, i), spec, (size_t)pod);

			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* Parse all of @json (trailing white space allowed) into a tree, or NULL with a message. */
static struct json_object *parse_json(const char *json, size_t len, struct kepler_error *err)
{
	struct json_tokener *tok;
	struct json_object *root = NULL;
	uint64_t cost, values;
	size_t end;

	if (!len) {
		kepler_error_set(err, -EBADMSG, "the answer is empty, not a PodList");
		return NULL;
	}
	if (len > INT_MAX) {
		kepler_error_set(err, -EBADMSG, "the PodList is larger than 2 GiB");
		return NULL;
	}
	cost = kepler_json_tree_cost(json, len, &values);
	if (cost > KEPLER_KUBE_PARSE_BUDGET) {
		kepler_error_set(
			err, -E2BIG,
			"the PodList (%zu bytes, %llu values) would take %llu MiB to parse, more than "
			"the %d MiB allowed: refused (a kubelet's is 10-40 MiB)",
			len, (unsigned long long)values, (unsigned long long)(cost >> 20),
			KEPLER_KUBE_PARSE_BUDGET >> 20);
		return NULL;
	}
	tok = json_tokener_new_ex(PODLIST_MAX_DEPTH);
	if (!tok) {
		kepler_error_set(err, -ENOMEM, "out of memory parsing the PodList");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, json, (int)len);
	if (!root) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		kepler_error_set(err, -EBADMSG, "the PodList is not JSON: %s",
				 e == json_tokener_continue ? "it ends too soon"
							    : json_tokener_error_desc(e));
		goto out;
	}
	for (end = json_tokener_get_parse_end(tok); end < len; end++)
		if (json[end] != ' ' && json[end] != '\n' && json[end] != '\r' && json[end] != '\t') {
			kepler_error_set(err, -EBADMSG,
					 "the PodList is followed by other bytes (at byte %zu)", end);
			json_object_put(root);
			root = NULL;
			break;
		}
out:
	json_tokener_free(tok);
	return root;
}

int kepler_kube_names_parse_podlist(struct kepler_kube_names *t, const char *json, size_t len,
				    struct kepler_error *err)
{
	struct json_object *root = parse_json(json, len, err), *items;
	size_t n;
	int r = 0;

	if (!root)
		return err->code ? err->code : -EBADMSG;

	items = json_object_is_type(root, json_type_object) ? member_of_type(root, "items", json_type_array)
							    : NULL;
	if (!items) {
		r = kepler_error_set(err, -EBADMSG, "the answer is JSON but not a PodList (no items array)");
		goto out;
	}
	n = json_object_array_length(items);
	for (size_t i = 0; i < n && r == 0; i++) {
		struct json_object *item = json_object_array_get_idx(items, i);

		if (!json_object_is_type(item, json_type_object))
			t->skipped++;
		else
			r = add_pod_item(t, item);
	}
	if (r == -E2BIG)
		kepler_error_set(err, r, "the PodList has more than %d pods or %d containers",
				 KEPLER_KUBE_MAX_PODS, KEPLER_KUBE_MAX_CONTAINERS);
	else if (r < 0)
		kepler_error_set(err, r, "out of memory reading the PodList");
out:
	json_object_put(root);
	kepler_kube_names_sort(t);
	return r;
}

/* ---- the kubelet's log symlinks ---- */

/* The UID in a target ".../<ns>_<pod>_<uid>/<container>/N.log" naming the same pod, or NULL. */
static const char *uid_of_target(const char *target, const char *pod, size_t plen, const char *ns,
				 size_t nslen)
{
	const char *end, *dir, *p;
	size_t n;

	if (!target)
		return NULL;
	end = target + strlen(target);
	for (int slashes = 0; end > target; end--) /* end at the '/' before <container>/N.log */
		if (end[-1] == '/' && ++slashes == 2)
			break;
	if (end <= target)
		return NULL;
	end--;
	for (dir = end; dir > target && dir[-1] != '/'; dir--)
		;
	n = (size_t)(end - dir);
	if (n != nslen + 1 + plen + 1 + KEPLER_POD_UID_LEN)
		return NULL;
	p = dir;
	if (memcmp(p, ns, nslen) || p[nslen] != '_' || memcmp(p + nslen + 1, pod, plen) ||
	    p[nslen + 1 + plen] != '_')
		return NULL;
	p += nslen + 1 + plen + 1;
	return valid_uid(p, KEPLER_POD_UID_LEN) ? p : NULL;
}

int kepler_kube_names_add_log_link(struct kepler_kube_names *t, const char *name, const char *target)
{
	size_t len = strlen(name), idpos, plen, nslen, clen;
	const char *u1, *u2, *uid, *cont;
	long pod;
	int r;

	if (len < 4 || memcmp(name + len - 4, ".log", 4))
		return 0; /* not a log link at all: not counted */
	if (len < 4 + 1 + KEPLER_CONTAINER_ID_LEN + 5)
		goto skip;
	idpos = len - 4 - KEPLER_CONTAINER_ID_LEN;
	if (name[idpos - 1] != '-' || !valid_id(name + idpos, KEPLER_CONTAINER_ID_LEN))
		goto skip;
	u1 = memchr(name, '_', idpos - 1);
	u2 = u1 ? memchr(u1 + 1, '_', (size_t)(name + idpos - 1 - (u1 + 1))) : NULL;
	if (!u2 || memchr(u2 + 1, '_', (size_t)(name + idpos - 1 - (u2 + 1))))
		goto skip;
	plen = (size_t)(u1 - name);
	nslen = (size_t)(u2 - u1 - 1);
	cont = u2 + 1;
	clen = (size_t)(name + idpos - 1 - cont);
	if (!dns1123(name, plen, KEPLER_KUBE_NAME_MAX, true) ||
	    !dns1123(u1 + 1, nslen, KEPLER_KUBE_LABEL_MAX, false) ||
	    !dns1123(cont, clen, KEPLER_KUBE_LABEL_MAX, false))
		goto skip;
	uid = uid_of_target(target, name, plen, u1 + 1, nslen);
	pod = add_pod(t, uid, name, plen, u1 + 1, nslen);
	if (pod < 0)
		return (int)pod;
	r = add_container(t, name + idpos, cont, clen, (size_t)pod, 0);
	return r < 0 ? r : 1;
skip:
	t->skipped++;
	return 0;
}

/* ---- sorting and lookup ---- */

static int cmp_pod_idx(const void *a, const void *b, void *arg)
{
	const struct kepler_kube_pod *pods = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	int c = strcmp(pods[i].uid, pods[j].uid);

	return c ? c : (i > j) - (i < j);
}

static int cmp_container(const void *a, const void *b)
{
	const struct kepler_kube_container *x = a, *y = b;
	int c = strcmp(x->id, y->id);

	/* ties: the one added first (its pod index is lower: pods are added in order) */
	return c ? c : (x->pod > y->pod) - (x->pod < y->pod);
}

/* Sort the pods by UID, one entry per UID; -ENOMEM leaves them unsorted (lookups then miss). */
static int sort_pods(struct kepler_kube_names *t, uint32_t *remap)
{
	uint32_t *idx = malloc((t->npods + 1) * sizeof(*idx));
	struct kepler_kube_pod *sorted = malloc((t->npods + 1) * sizeof(*sorted));
	size_t n = 0;

	if (!idx || !sorted) {
		free(idx);
		free(sorted);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->npods; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, t->npods, sizeof(*idx), cmp_pod_idx, t->pods);
	for (size_t k = 0; k < t->npods; k++) {
		const struct kepler_kube_pod *p = &t->pods[idx[k]];

		if (n && p->uid[0] && !strcmp(sorted[n - 1].uid, p->uid)) {
			remap[idx[k]] = (uint32_t)(n - 1);
			continue;
		}
		remap[idx[k]] = (uint32_t)n;
		sorted[n++] = *p;
	}
	free(idx);
	free(t->pods);
	t->pods = sorted;
	t->npods = n;
	t->pods_cap = t->npods + 1;
	return 0;
}

void kepler_kube_names_sort(struct kepler_kube_names *t)
{
	uint32_t *remap = malloc((t->npods + 1) * sizeof(*remap));
	size_t n = 0;

	if (!remap)
		return;
	if (t->ncontainers)
		qsort(t->containers, t->ncontainers, sizeof(*t->containers), cmp_container);
	if (sort_pods(t, remap) == 0)
		for (size_t i = 0; i < t->ncontainers; i++)
			t->containers[i].pod = remap[t->containers[i].pod];
	free(remap);
	for (size_t i = 0; i < t->ncontainers; i++)
		if (!n || strcmp(t->containers[n - 1].id, t->containers[i].id))
			t->containers[n++] = t->containers[i];
	t->ncontainers = n;
}

static int cmp_key_container(const void *key, const void *elem)
{
	return strcmp(key, ((const struct kepler_kube_container *)elem)->id);
}

static int cmp_key_pod(const void *key, const void *elem)
{
	return strcmp(key, ((const struct kepler_kube_pod *)elem)->uid);
}

const struct kepler_kube_container *kepler_kube_names_container(const struct kepler_kube_names *t,
								const char *id)
{
	if (!t || !t->ncontainers || !id[0])
		return NULL;
	return bsearch(id, t->containers, t->ncontainers, sizeof(*t->containers), cmp_key_container);
}

const struct kepler_kube_pod *kepler_kube_names_pod(const struct kepler_kube_names *t, const char *uid)
{
	if (!t || !t->npods || !uid[0])
		return NULL;
	return bsearch(uid, t->pods, t->npods, sizeof(*t->pods), cmp_key_pod);
}
