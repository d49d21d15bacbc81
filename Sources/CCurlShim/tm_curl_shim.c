// Data path, step 5 (sync): libcurl for the agent's HTTP client (kept-alive connections, CA file
// and key pins).

#include "tm_curl_shim.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *data;
    size_t length;
    int failed;
} tm_buffer;

static size_t tm_append(char *data, size_t size, size_t count, void *user) {
    tm_buffer *buffer = user;
    size_t add = size * count;
    char *grown = realloc(buffer->data, buffer->length + add + 1);
    if (grown == NULL) {
        buffer->failed = 1;
        return 0;
    }
    memcpy(grown + buffer->length, data, add);
    buffer->length += add;
    grown[buffer->length] = 0;
    buffer->data = grown;
    return add;
}

struct tm_curl {
    CURL *easy;
};

void tm_curl_global_init(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

tm_curl *tm_curl_create(void) {
    tm_curl *handle = malloc(sizeof(*handle));
    if (handle == NULL) return NULL;
    handle->easy = curl_easy_init();
    if (handle->easy == NULL) {
        free(handle);
        return NULL;
    }
    return handle;
}

void tm_curl_free(tm_curl *handle) {
    if (handle == NULL) return;
    curl_easy_cleanup(handle->easy);
    free(handle);
}

typedef struct {
    tm_curl_should_stop should_stop;
    void *context;
} tm_stop;

static int tm_progress(void *clientp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    const tm_stop *stop = clientp;
    return stop->should_stop(stop->context) != 0 ? 1 : 0;
}

int tm_curl_post(tm_curl *handle, const char *url, const char *const *header_lines, size_t header_count, const void *body,
                 size_t body_length, const char *ca_file, const char *pinned_public_key, long timeout_ms,
                 tm_curl_should_stop should_stop, void *stop_context, tm_curl_result *result) {
    memset(result, 0, sizeof(*result));
    CURL *curl = handle->easy;
    struct curl_slist *headers = NULL;
    for (size_t i = 0; i < header_count; i++) {
        struct curl_slist *next = curl_slist_append(headers, header_lines[i]);
        if (next == NULL) {
            curl_slist_free_all(headers);
            return -1;
        }
        headers = next;
    }
    tm_buffer head = {0}, content = {0};
    char error[CURL_ERROR_SIZE] = {0};
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_length);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(curl, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    if (ca_file != NULL) curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file);
    if (pinned_public_key != NULL) curl_easy_setopt(curl, CURLOPT_PINNEDPUBLICKEY, pinned_public_key);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, tm_append);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &head);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, tm_append);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &content);
    tm_stop stop = {should_stop, stop_context};
    if (should_stop != NULL) {
        curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, tm_progress);
        curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &stop);
    }
    CURLcode code = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result->status);
    curl_easy_getinfo(curl, CURLINFO_NUM_CONNECTS, &result->new_connections);
    // The options point at this call's headers, buffers and body: forget them before they go.
    curl_easy_reset(curl);
    curl_slist_free_all(headers);
    if (head.failed || content.failed) {
        free(head.data);
        free(content.data);
        return -1;
    }
    result->curl_code = (int)code;
    switch (code) {
    case CURLE_OK: result->failure_kind = 0; break;
    case CURLE_PEER_FAILED_VERIFICATION: result->failure_kind = 1; break;
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH: result->failure_kind = 2; break;
    case CURLE_SSL_CACERT_BADFILE: result->failure_kind = 3; break;
    case CURLE_ABORTED_BY_CALLBACK: result->failure_kind = 5; break;
    default: result->failure_kind = 4; break;
    }
    const char *message = error[0] != 0 ? error : (code != CURLE_OK ? curl_easy_strerror(code) : "");
    strncpy(result->error, message, sizeof(result->error) - 1);
    result->headers = head.data;
    result->headers_length = head.length;
    result->body = content.data;
    result->body_length = content.length;
    return 0;
}

void tm_curl_result_free(tm_curl_result *result) {
    free(result->headers);
    free(result->body);
    result->headers = NULL;
    result->body = NULL;
}
