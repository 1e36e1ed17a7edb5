// SPDX-License-Identifier: Apache-2.0
/*
 * libcurl loaded at run time (curl_runtime.h): the libcurl functions the
 * clients call, each forwarding to the library once kepler_curl_load()
 * loaded it. curl.h's prototypes are the contract; its type-checking
 * macros are left out here only, so that the functions can be defined.
 */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "curl_runtime.h"

/* Debian's libcurl3-gnutls (what the package and the image install), then libcurl4. */
static const char *const libraries[] = { "libcurl-gnutls.so.4", "libcurl.so.4" };

struct curl_api {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *curl);
	void (*easy_reset)(CURL *curl);
	CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *curl);
	CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
	void (*slist_free_all)(struct curl_slist *list);
};

#define SYM(field)                                               \
	{                                                        \
		"curl_" #field, offsetof(struct curl_api, field) \
	}

static const struct {
	const char *name;
	size_t offset;
} symbols[] = {
	SYM(global_init),   SYM(global_cleanup), SYM(easy_init),      SYM(easy_cleanup),
	SYM(easy_reset),    SYM(easy_setopt),    SYM(easy_perform),   SYM(easy_getinfo),
	SYM(easy_strerror), SYM(slist_append),   SYM(slist_free_all),
};

static struct curl_api loaded;
static const struct curl_api *api; /* &loaded once every symbol is there */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct curl_api *api_now(void)
{
	return __atomic_load_n(&api, __ATOMIC_ACQUIRE);
}

static void *open_library(const char **ret_name, char *why, size_t size)
{
	for (size_t i = 0; i < sizeof(libraries) / sizeof(libraries[0]); i++) {
		void *h;

		dlerror();
		h = dlopen(libraries[i], RTLD_NOW | RTLD_LOCAL);
		if (h) {
			*ret_name = libraries[i];
			return h;
		}
		if (i == 0) {
			const char *e = dlerror();

			snprintf(why, size, "%s", e ? e : "not found");
		}
	}
	return NULL;
}

static int load_locked(struct kepler_error *err)
{
	const char *name = NULL;
	char why[256] = "";
	void *h = open_library(&name, why, sizeof(why));

	if (!h)
		return kepler_error_set(err, -ENOENT,
					"cannot load libcurl (%s); the kubelet and Redfish clients need it: "
					"install libcurl3-gnutls (or libcurl4)",
					why);
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		void *p = dlsym(h, symbols[i].name);

		if (!p) {
			dlclose(h);
			return kepler_error_set(err, -ENOSYS,
						"%s has no %s: not the libcurl this was built for", name,
						symbols[i].name);
		}
		*(void **)((char *)&loaded + symbols[i].offset) = p;
	}
	__atomic_store_n(&api, &loaded, __ATOMIC_RELEASE); /* the library stays loaded */
	return 0;
}

int kepler_curl_load(struct kepler_error *err)
{
	int r = 0;

	if (api_now())
		return 0;
	pthread_mutex_lock(&load_lock);
	if (!api_now())
		r = load_locked(err);
	pthread_mutex_unlock(&load_lock);
	return r;
}

CURLcode curl_global_init(long flags)
{
	const struct curl_api *a = api_now();

	return a ? a->global_init(flags) : CURLE_FAILED_INIT;
}

void curl_global_cleanup(void)
{
	const struct curl_api *a = api_now();

	if (a)
		a->global_cleanup();
}

CURL *curl_easy_init(void)
{
	const struct curl_api *a = api_now();

	return a ? a->easy_init() : NULL;
}

void curl_easy_cleanup(CURL *curl)
{
	const struct curl_api *a = api_now();

	if (a)
		a->easy_cleanup(curl);
}

void curl_easy_reset(CURL *curl)
{
	const struct curl_api *a = api_now();

	if (a)
		a->easy_reset(curl);
}

/*
 * The one argument after @option, passed on with the type its range says
 * (curl.h: long below CURLOPTTYPE_OBJECTPOINT, then object pointers,
 * function pointers, curl_off_t, blobs), as libcurl itself reads it.
 */
CURLcode curl_easy_setopt(CURL *curl, CURLoption option, ...)
{
	const struct curl_api *a = api_now();
	CURLcode r;
	va_list ap;

	if (!a)
		return CURLE_FAILED_INIT;
	va_start(ap, option);
	if (option < CURLOPTTYPE_OBJECTPOINT)
		r = a->easy_setopt(curl, option, va_arg(ap, long));
	else if (option < CURLOPTTYPE_FUNCTIONPOINT)
		r = a->easy_setopt(curl, option, va_arg(ap, void *));
	else if (option < CURLOPTTYPE_OFF_T)
		r = a->easy_setopt(curl, option, va_arg(ap, void (*)(void)));
	else if (option < CURLOPTTYPE_BLOB)
		r = a->easy_setopt(curl, option, va_arg(ap, curl_off_t));
	else
		r = a->easy_setopt(curl, option, va_arg(ap, void *));
	va_end(ap);
	return r;
}

CURLcode curl_easy_perform(CURL *curl)
{
	const struct curl_api *a = api_now();

	return a ? a->easy_perform(curl) : CURLE_FAILED_INIT;
}

/* Every CURLINFO takes a pointer to where the answer goes. */
CURLcode curl_easy_getinfo(CURL *curl, CURLINFO info, ...)
{
	const struct curl_api *a = api_now();
	CURLcode r;
	va_list ap;

	if (!a)
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	r = a->easy_getinfo(curl, info, va_arg(ap, void *));
	va_end(ap);
	return r;
}

const char *curl_easy_strerror(CURLcode code)
{
	const struct curl_api *a = api_now();

	return a ? a->easy_strerror(code) : "libcurl is not loaded";
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s)
{
	const struct curl_api *a = api_now();

	return a ? a->slist_append(list, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
	const struct curl_api *a = api_now();

	if (a)
		a->slist_free_all(list);
}
