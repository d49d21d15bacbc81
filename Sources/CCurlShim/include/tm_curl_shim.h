// A flat C API over libcurl's easy interface for the agent's HTTP transport.
//
// curl_easy_setopt is variadic and does not import into Swift; this shim makes one POST with the
// options the agent needs (a CA file, a pinned public key, a timeout) and hands back the status,
// the headers and the body. A handle keeps libcurl's connection cache, so POSTs made on the same
// handle reuse one kept-alive connection (and its TLS session). Blocking: call it from a thread
// of its own, never the cooperative pool; one thread at a time per handle.
#ifndef TM_CURL_SHIM_H
#define TM_CURL_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What tm_curl_post produced. Free with tm_curl_result_free.
typedef struct {
    /// libcurl's CURLcode: 0 when an answer arrived (whatever its status).
    int curl_code;
    /// Which kind of failure: 0 none, 1 the server's certificate or name was not trusted,
    /// 2 the pinned public key did not match, 3 the CA file could not be read, 4 other,
    /// 5 stopped by the caller (`should_stop`).
    int failure_kind;
    long status;
    /// Connections libcurl opened for this POST (0 when it reused a kept-alive one).
    long new_connections;
    /// Raw header lines, CRLF-separated, as received.
    char *headers;
    size_t headers_length;
    char *body;
    size_t body_length;
    /// libcurl's message for a failure (empty otherwise).
    char error[256];
} tm_curl_result;

/// A libcurl easy handle and the connections it keeps alive.
typedef struct tm_curl tm_curl;

/// One-time global initialisation (thread-safe to call more than once; do it before threads).
void tm_curl_global_init(void);

/// A new handle, or NULL when out of memory. Free with tm_curl_free (closes its connections).
tm_curl *tm_curl_create(void);

void tm_curl_free(tm_curl *handle);

/// POSTs `body` to `url` on `handle` with the given header lines ("Name: value"), reusing a
/// connection the handle keeps alive to the same server when there is one (libcurl opens a new
/// one when the server closed it). Every option is set for this POST and reset after it
/// (curl_easy_reset keeps the handle's live connections). `ca_file` (may be NULL)
/// replaces the system trust store; `pinned_public_key` (may be NULL) is libcurl's
/// CURLOPT_PINNEDPUBLICKEY ("sha256//BASE64[;sha256//BASE64]"). `should_stop` (may be NULL) is
/// asked with `stop_context` while the POST waits (libcurl's progress callback, "about once a
/// second" when nothing moves); a nonzero answer ends the POST, failure_kind 5. Returns
/// 0 on success, -1 when out of memory; failures of the exchange are reported in `result`.
typedef int (*tm_curl_should_stop)(void *stop_context);
int tm_curl_post(tm_curl *handle, const char *url, const char *const *header_lines, size_t header_count, const void *body,
                 size_t body_length, const char *ca_file, const char *pinned_public_key, long timeout_ms,
                 tm_curl_should_stop should_stop, void *stop_context, tm_curl_result *result);

void tm_curl_result_free(tm_curl_result *result);

#ifdef __cplusplus
}
#endif

#endif
