// A flat C API over libcurl's easy interface for the agent's HTTPS transport.
//
// curl_easy_setopt is variadic and does not import into Swift; this shim makes one POST with the
// options the agent needs (a CA file, a pinned public key, a timeout) and hands back the status,
// the headers and the body. Blocking: call it from a thread of its own, never the cooperative pool.
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
    /// 2 the pinned public key did not match, 3 the CA file could not be read, 4 other.
    int failure_kind;
    long status;
    /// Raw header lines, CRLF-separated, as received.
    char *headers;
    size_t headers_length;
    char *body;
    size_t body_length;
    /// libcurl's message for a failure (empty otherwise).
    char error[256];
} tm_curl_result;

/// One-time global initialisation (thread-safe to call more than once; do it before threads).
void tm_curl_global_init(void);

/// POSTs `body` to `url` with the given header lines ("Name: value"). `ca_file` (may be NULL)
/// replaces the system trust store; `pinned_public_key` (may be NULL) is libcurl's
/// CURLOPT_PINNEDPUBLICKEY ("sha256//BASE64[;sha256//BASE64]"). Returns 0 on success, -1 when
/// out of memory; failures of the exchange are reported in `result`.
int tm_curl_post(const char *url, const char *const *header_lines, size_t header_count, const void *body, size_t body_length,
                 const char *ca_file, const char *pinned_public_key, long timeout_ms, tm_curl_result *result);

void tm_curl_result_free(tm_curl_result *result);

#ifdef __cplusplus
}
#endif

#endif
