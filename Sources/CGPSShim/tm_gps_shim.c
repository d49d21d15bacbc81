// Data path, step 2 (position): the only C that reads libgps's report struct.

// The only code that touches `struct gps_data_t`. See include/tm_gps_shim.h for why.
#include "tm_gps_shim.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <gps.h>

struct tm_gps_session {
    struct gps_data_t data;
    // The current JSON line, as gpsd sent it; the TPV time is taken from it verbatim.
    char message[10240];
    // What gps_unpack parses (and may write into).
    char scratch[10240];
    // Bytes read from gpsd not yet split into lines. The shim reads the socket itself instead of
    // calling gps_read, so that each line is checked before libgps's parser sees it (see
    // safe_to_unpack).
    char input[16384];
    size_t buffered;
};

int tm_gps_open(const char *host, const char *port, tm_gps_session **out) {
    *out = NULL;
    tm_gps_session *session = calloc(1, sizeof(*session));
    if (session == NULL) {
        return NL_NOSOCK;
    }
    errno = 0;
    if (gps_open(host, port, &session->data) != 0) {
        // libgps leaves its own (negative) error code in errno.
        int code = errno;
        free(session);
        return code < 0 ? code : NL_NOSOCK;
    }
    // Children the agent (or a test) spawns must not inherit the connection and keep it open.
    int flags = fcntl((int)session->data.gps_fd, F_GETFD);
    if (flags >= 0) {
        (void)fcntl((int)session->data.gps_fd, F_SETFD, flags | FD_CLOEXEC);
    }
    *out = session;
    return 0;
}

int tm_gps_watch(tm_gps_session *session) {
    return gps_stream(&session->data, WATCH_ENABLE | WATCH_JSON, NULL) == 0 ? 0 : -1;
}

int tm_gps_waiting(tm_gps_session *session, int microseconds) {
    if (memchr(session->input, '\n', session->buffered) != NULL) {
        return 1;
    }
    struct pollfd descriptor = {.fd = (int)session->data.gps_fd, .events = POLLIN};
    int ready = poll(&descriptor, 1, (microseconds + 999) / 1000);
    if (ready < 0) {
        return errno == EINTR ? 0 : -1;
    }
    return ready > 0 ? 1 : 0;
}

// Copies the value of the top-level "time" member from a TPV line, as gpsd wrote it.
static bool copy_json_time(const char *message, char *out, size_t size) {
    const char *key = "\"time\":\"";
    const char *start = strstr(message, key);
    if (start == NULL) {
        return false;
    }
    start += strlen(key);
    const char *end = strchr(start, '"');
    if (end == NULL || (size_t)(end - start) >= size) {
        return false;
    }
    memcpy(out, start, (size_t)(end - start));
    out[end - start] = '\0';
    return true;
}

static bool present(double value) { return isfinite(value) != 0; }

// What one unpacked report carried (`data->set` says which fields this report set), with the
// raw line it came from.
static void fill_report(const struct gps_data_t *data, const char *message, tm_gps_report *report) {
    gps_mask_t set = data->set;
    const struct gps_fix_t *fix = &data->fix;
    if (set & MODE_SET) {
        report->kind = TM_GPS_REPORT_TPV;
        report->mode = fix->mode;
        if ((set & TIME_SET) && fix->time.tv_sec != 0) {
            report->has_time = true;
            report->time_seconds = (int64_t)fix->time.tv_sec;
            report->time_nanoseconds = (int32_t)fix->time.tv_nsec;
            if (!copy_json_time(message, report->time, sizeof(report->time))) {
                timespec_to_iso8601(fix->time, report->time, sizeof(report->time));
            }
        }
        report->has_position = (set & LATLON_SET) && present(fix->latitude) && present(fix->longitude);
        report->latitude = fix->latitude;
        report->longitude = fix->longitude;
        report->has_altitude_hae = present(fix->altHAE);
        report->altitude_hae = fix->altHAE;
        report->has_altitude_msl = present(fix->altMSL);
        report->altitude_msl = fix->altMSL;
        report->has_speed = present(fix->speed);
        report->speed = fix->speed;
        report->has_track = present(fix->track);
        report->track = fix->track;
        report->has_climb = present(fix->climb);
        report->climb = fix->climb;
        report->has_eph = present(fix->eph);
        report->eph = fix->eph;
        report->has_epx = present(fix->epx);
        report->epx = fix->epx;
        report->has_epy = present(fix->epy);
        report->epy = fix->epy;
        report->has_epv = present(fix->epv);
        report->epv = fix->epv;
    } else if (set & DEVICELIST_SET) {
        report->kind = TM_GPS_REPORT_DEVICES;
        report->device_count = data->devices.ndevices;
    } else if ((set & DEVICE_SET) || strncmp(message, "{\"class\":\"DEVICE\",", 18) == 0) {
        // gpsd 3.22 announces a closed receiver as {"class":"DEVICE",...,"activated":0}, which
        // libgps 3.22 fails to parse (it expects a time string), leaving `set` empty: the raw line
        // is the reliable signal.
        report->kind = TM_GPS_REPORT_DEVICE;
        report->device_activated = strstr(message, "\"activated\":0") == NULL;
    } else if (set & ERROR_SET) {
        report->kind = TM_GPS_REPORT_ERROR;
    } else {
        report->kind = TM_GPS_REPORT_OTHER;
    }
}

static size_t occurrences(const char *text, const char *needle) {
    size_t count = 0;
    for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle)) {
        count++;
    }
    return count;
}

// libgps 3.22's gps_unpack never returns on some lines (found by the gpsd-report fuzzer): one
// with a second "class" member inside it, e.g. {"class":"TPV","x":[{"class":"DEVICE"}]}, or
// with anything but a member before its class, e.g. {:"class":"PPS"; it keeps calling its parser
// at the same offset. Every line gpsd sends starts with its class, and only DEVICES (read here
// without libgps) and POLL answers (the agent never polls) nest others, so libgps gets only
// lines that start with their class and have no other.
static bool safe_to_unpack(const char *line) {
    return strncmp(line, "{\"class\":\"", 10) == 0 && occurrences(line, "\"class\":") == 1;
}

// The report one line makes: the DEVICES list counted here, anything else through libgps's
// parser if it is safe to, then copied field by field.
static void unpack_line(tm_gps_session *session, const char *line, size_t length, tm_gps_report *report) {
    memset(report, 0, sizeof(*report));
    size_t kept = length < sizeof(session->message) - 1 ? length : sizeof(session->message) - 1;
    memcpy(session->message, line, kept);
    session->message[kept] = '\0';
    // `set` accumulates across reads (SKY and DEVICE add bits, a TPV replaces them): clear it so
    // MODE_SET means "this line was a TPV".
    session->data.set = 0;
    if (strncmp(session->message, "{\"class\":\"DEVICES\",", 19) == 0) {
        report->kind = TM_GPS_REPORT_DEVICES;
        report->device_count = (int)occurrences(session->message, "{\"class\":\"DEVICE\",");
        return;
    }
    if (safe_to_unpack(session->message)) {
        // gps_unpack may write into the text it parses: a copy, so the time comes from the line.
        memcpy(session->scratch, session->message, kept + 1);
        (void)gps_unpack(session->scratch, &session->data);
    }
    fill_report(&session->data, session->message, report);
}

int tm_gps_read(tm_gps_session *session, tm_gps_report *report) {
    memset(report, 0, sizeof(*report));
    char *end = memchr(session->input, '\n', session->buffered);
    if (end == NULL) {
        if (session->buffered == sizeof(session->input)) {
            // Far longer than anything gpsd sends: dropped, the rest of it is read as a bad line.
            session->buffered = 0;
        }
        ssize_t got = recv((int)session->data.gps_fd, session->input + session->buffered,
                           sizeof(session->input) - session->buffered, MSG_DONTWAIT);
        if (got == 0) {
            return -1;
        }
        if (got < 0) {
            return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
        }
        session->buffered += (size_t)got;
        end = memchr(session->input, '\n', session->buffered);
        if (end == NULL) {
            return 0;
        }
    }
    size_t length = (size_t)(end - session->input);
    size_t line = length > 0 && session->input[length - 1] == '\r' ? length - 1 : length;
    unpack_line(session, session->input, line, report);
    session->buffered -= length + 1;
    memmove(session->input, end + 1, session->buffered);
    return 1;
}

int tm_gps_unpack(const char *line, size_t length, tm_gps_report *report) {
    memset(report, 0, sizeof(*report));
    tm_gps_session *session = calloc(1, sizeof(*session));
    if (session == NULL) {
        return -1;
    }
    unpack_line(session, line, length, report);
    free(session);
    return 0;
}

void tm_gps_close(tm_gps_session *session) {
    if (session == NULL) {
        return;
    }
    gps_close(&session->data);
    free(session);
}

const char *tm_gps_errstr(int code) { return gps_errstr(code); }
