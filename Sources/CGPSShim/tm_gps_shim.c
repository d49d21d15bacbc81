// The only code that touches `struct gps_data_t`. See include/tm_gps_shim.h for why.
#include "tm_gps_shim.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gps.h>

struct tm_gps_session {
    struct gps_data_t data;
    // gps_read copies the raw JSON line here; the TPV time is taken from it verbatim.
    char message[10240];
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
    errno = 0;
    if (gps_waiting(&session->data, microseconds)) {
        return 1;
    }
    // gps_waiting returns false both on timeout and on error; errno tells them apart.
    return (errno == 0 || errno == EINTR) ? 0 : -1;
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

int tm_gps_read(tm_gps_session *session, tm_gps_report *report) {
    memset(report, 0, sizeof(*report));
    // `set` accumulates across reads (SKY and DEVICE add bits, a TPV replaces them): clear it so
    // MODE_SET means "this read was a TPV".
    session->data.set = 0;
    session->message[0] = '\0';
    int status = gps_read(&session->data, session->message, (int)sizeof(session->message));
    if (status < 0) {
        return -1;
    }
    if (status == 0) {
        return 0;
    }
    gps_mask_t set = session->data.set;
    const struct gps_fix_t *fix = &session->data.fix;
    if (set & MODE_SET) {
        report->kind = TM_GPS_REPORT_TPV;
        report->mode = fix->mode;
        if ((set & TIME_SET) && fix->time.tv_sec != 0) {
            report->has_time = true;
            report->time_seconds = (int64_t)fix->time.tv_sec;
            report->time_nanoseconds = (int32_t)fix->time.tv_nsec;
            if (!copy_json_time(session->message, report->time, sizeof(report->time))) {
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
        report->device_count = session->data.devices.ndevices;
    } else if ((set & DEVICE_SET) || strncmp(session->message, "{\"class\":\"DEVICE\",", 18) == 0) {
        // gpsd 3.22 announces a closed receiver as {"class":"DEVICE",...,"activated":0}, which
        // libgps 3.22 fails to parse (it expects a time string), leaving `set` empty: the raw line
        // is the reliable signal.
        report->kind = TM_GPS_REPORT_DEVICE;
        report->device_activated = strstr(session->message, "\"activated\":0") == NULL;
    } else if (set & ERROR_SET) {
        report->kind = TM_GPS_REPORT_ERROR;
    } else {
        report->kind = TM_GPS_REPORT_OTHER;
    }
    return 1;
}

void tm_gps_close(tm_gps_session *session) {
    if (session == NULL) {
        return;
    }
    gps_close(&session->data);
    free(session);
}

const char *tm_gps_errstr(int code) { return gps_errstr(code); }
