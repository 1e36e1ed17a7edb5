// SPDX-License-Identifier: Apache-2.0
/*
 * Kepler's BMC file (its experimental.platform.redfish.configFile, shipped
 * as a Secret):
 *
 *   nodes:
 *     worker-1: bmc-1
 *   bmcs:
 *     bmc-1:
 *       endpoint: https://10.0.0.5
 *       username: admin
 *       password: secret
 *       insecure: false
 *       caFile: /etc/kepler-c/bmc-ca.crt   # kepler-c's addition
 *
 * The same file serves IPMI (platform.ipmi.config-file): there the
 * endpoint is lanplus://HOST[:PORT] (RMCP+, port 623 by default), and
 * cipherSuite (0 to 17, default 3) and privilege (user, the default, as
 * DCMI asks for its power reading; operator or admin for BMCs that want
 * more) and workarounds (FreeIPMI's names of BMC quirks, comma-separated:
 * opensesspriv, authcap, intel20, supermicro20, sun20,
 * integritycheckvalue, nochecksumcheck) may be given.
 *
 * It holds a password: a secret file (kepler/secret.h), refused when a
 * planted link, not a regular file, not root's, or readable by others.
 */
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "kepler/secret.h"
#include "redfish.h"

#define BMC_FILE_MAX (1024 * 1024)

static yaml_node_t *get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key))
			return yaml_document_get_node(doc, p->value);
	}
	return NULL;
}

/* Scalar @key of @map into @ret; -ENOENT when absent (and @required), -EINVAL when not a short scalar. */
static int field(yaml_document_t *doc, yaml_node_t *map, const char *key, char *ret, size_t size,
		 bool required, const char *path, struct kepler_error *err)
{
	yaml_node_t *v = get(doc, map, key);

	ret[0] = '\0';
	if (!v)
		return required ? kepler_error_set(err, -EINVAL, "%s: the BMC has no %s", path, key) : 0;
	if (v->type != YAML_SCALAR_NODE || v->data.scalar.length >= size)
		return kepler_error_set(err, -EINVAL, "%s: %s is not a string of at most %zu bytes", path,
					key, size - 1);
	memcpy(ret, v->data.scalar.value, v->data.scalar.length + 1);
	return 0;
}

/* An IPMI BMC's endpoint (lanplus://HOST[:PORT]) and cipher suite. */
static int take_ipmi(const char *path, const char *suite, const char *priv, struct kepler_redfish_bmc *ret,
		     struct kepler_error *err)
{
	static const char *const levels[] = { "user", "operator", "admin" };
	char *end = NULL;
	long cs = suite[0] ? strtol(suite, &end, 10) : 3;

	if (suite[0] && (*end || cs < 0 || cs > 17))
		return kepler_error_set(err, -EINVAL, "%s: cipherSuite is '%s', not 0 to 17", path, suite);
	ret->cipher_suite = (uint8_t)cs;
	ret->privilege = KEPLER_BMC_PRIVILEGE_USER;
	for (int i = 0; priv[0] && i < 3; i++)
		if (!strcmp(priv, levels[i]))
			ret->privilege = (uint8_t)(KEPLER_BMC_PRIVILEGE_USER + i);
	if (priv[0] && strcmp(priv, levels[ret->privilege - KEPLER_BMC_PRIVILEGE_USER]))
		return kepler_error_set(err, -EINVAL, "%s: privilege is '%s', not user, operator or admin",
					path, priv);
	if (strncmp(ret->endpoint, "lanplus://", 10) || !ret->endpoint[10] ||
	    strpbrk(ret->endpoint + 10, "/?#@"))
		return kepler_error_set(err, -EINVAL, "%s: endpoint '%s' is not lanplus://HOST[:PORT]", path,
					ret->endpoint);
	return 0;
}

static int take_bmc(yaml_document_t *doc, yaml_node_t *b, const char *path, bool ipmi,
		    struct kepler_redfish_bmc *ret, struct kepler_error *err)
{
	char insecure[16], suite[16], priv[16];
	int r;

	if (!b || b->type != YAML_MAPPING_NODE)
		return kepler_error_set(err, -EINVAL, "%s: BMC '%s' is not a mapping", path, ret->id);
	r = field(doc, b, "endpoint", ret->endpoint, sizeof(ret->endpoint), true, path, err);
	if (r == 0)
		r = field(doc, b, "username", ret->username, sizeof(ret->username), true, path, err);
	if (r == 0)
		r = field(doc, b, "password", ret->password, sizeof(ret->password), true, path, err);
	if (r == 0)
		r = field(doc, b, "caFile", ret->ca_file, sizeof(ret->ca_file), false, path, err);
	if (r == 0)
		r = field(doc, b, "insecure", insecure, sizeof(insecure), false, path, err);
	if (r == 0)
		r = field(doc, b, "cipherSuite", suite, sizeof(suite), false, path, err);
	if (r == 0)
		r = field(doc, b, "privilege", priv, sizeof(priv), false, path, err);
	if (r == 0)
		r = field(doc, b, "workarounds", ret->workarounds, sizeof(ret->workarounds), false, path,
			  err);
	if (r < 0)
		return r;
	if (ipmi)
		return take_ipmi(path, suite, priv, ret, err);
	if (insecure[0] && strcmp(insecure, "true") && strcmp(insecure, "false"))
		return kepler_error_set(err, -EINVAL, "%s: insecure is '%s', not true or false", path,
					insecure);
	ret->insecure = !strcmp(insecure, "true");
	if (strncmp(ret->endpoint, "https://", 8) && strncmp(ret->endpoint, "http://", 7))
		return kepler_error_set(err, -EINVAL, "%s: endpoint '%s' is not an https:// URL", path,
					ret->endpoint);
	for (size_t n = strlen(ret->endpoint); n > 8 && ret->endpoint[n - 1] == '/'; n--)
		ret->endpoint[n - 1] = '\0';
	return 0;
}

int kepler_redfish_config_load(const char *path, const char *node, struct kepler_redfish_bmc *ret,
			       struct kepler_error *err)
{
	return kepler_bmc_config_load(path, node, false, ret, err);
}

int kepler_bmc_config_load(const char *path, const char *node, bool ipmi, struct kepler_redfish_bmc *ret,
			   struct kepler_error *err)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root, *id;
	char *text = NULL;
	size_t len = 0;
	/* it holds passwords: a secret file, read at start as root (kepler/secret.h) */
	int r = kepler_secret_read("the BMC file", path, kepler_secret_owner(NULL), BMC_FILE_MAX, &text, &len,
				   err);

	if (r < 0)
		return r;
	memset(ret, 0, sizeof(*ret));
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		r = kepler_error_set(err, -EINVAL, "%s:%zu: %s", path, parser.problem_mark.line + 1,
				     parser.problem ? parser.problem : "not YAML");
		goto out_parser;
	}
	root = yaml_document_get_root_node(&doc);
	id = get(&doc, get(&doc, root, "nodes"), node);
	if (!id || id->type != YAML_SCALAR_NODE || id->data.scalar.length >= sizeof(ret->id)) {
		r = kepler_error_set(err, -ENOENT, "%s: no BMC for node '%s' under nodes", path, node);
		goto out_doc;
	}
	memcpy(ret->id, id->data.scalar.value, id->data.scalar.length + 1);
	if (!get(&doc, get(&doc, root, "bmcs"), ret->id)) {
		r = kepler_error_set(err, -ENOENT, "%s: node '%s' names BMC '%s', which bmcs does not have",
				     path, node, ret->id);
		goto out_doc;
	}
	r = take_bmc(&doc, get(&doc, get(&doc, root, "bmcs"), ret->id), path, ipmi, ret, err);
out_doc:
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&parser);
	explicit_bzero(text, len);
	free(text);
	if (r < 0)
		explicit_bzero(ret->password, sizeof(ret->password));
	return r;
}
