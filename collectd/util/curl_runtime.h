/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl, loaded when a client first needs it (kube.pod-source kubelet,
 * a Redfish meter), not at every start: linking it maps some thirty
 * libraries (GnuTLS, Kerberos, LDAP, ...) into the collector, 7-8 ms of
 * CPU at each start and ~5 MiB of its RSS on nodes that use neither.
 *
 * The collector is not linked with libcurl: curl_runtime.c defines the
 * libcurl functions the clients call (curl_easy_setopt and the others they
 * use, with curl.h's own prototypes and type checks) and forwards each to
 * the library it loads. Call kepler_curl_load() before the first of them
 * for a clear error; until it succeeded they fail (CURLE_FAILED_INIT, NULL).
 */
#ifndef KEPLER_CURL_RUNTIME_H
#define KEPLER_CURL_RUNTIME_H

#include "kepler/error.h"

/*
 * Load libcurl (libcurl-gnutls.so.4, else libcurl.so.4) once; later calls
 * return at once. 0, or -ENOENT (not installed: which package to install)
 * or -ENOSYS (a symbol missing: too old) with a message. Thread-safe.
 */
int kepler_curl_load(struct kepler_error *err);

#endif
