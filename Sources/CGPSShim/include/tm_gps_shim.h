// A flat, stable C API over libgps for Swift.
//
// libgps's `struct gps_data_t` is about 24 KB and its layout changes across gpsd versions, so it
// never crosses into Swift: the shim allocates it once on the heap behind an opaque handle, and
// each read copies the few fields the agent needs into `tm_gps_report`. No libgps type appears in
// this header, so Swift never depends on gps.h's layout.
#ifndef TM_GPS_SHIM_H
#define TM_GPS_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One connection to gpsd: owns a heap-allocated gps_data_t. Use it from one thread only.
typedef struct tm_gps_session tm_gps_session;

/// What one successful read carried.
typedef enum {
    /// Nothing the agent looks at (SKY, VERSION, WATCH, GST, ...).
    TM_GPS_REPORT_OTHER = 0,
    /// A TPV: `mode` and the fix fields below are valid.
    TM_GPS_REPORT_TPV = 1,
    /// A DEVICE message: `device_activated` says whether the receiver is now open.
    TM_GPS_REPORT_DEVICE = 2,
    /// A DEVICES list: `device_count` receivers are active.
    TM_GPS_REPORT_DEVICES = 3,
    /// An ERROR message from gpsd.
    TM_GPS_REPORT_ERROR = 4,
} tm_gps_report_kind;

/// The fields of one report. A `has_*` flag is false when gpsd did not send the field (libgps
/// leaves it NaN); the value is then meaningless.
typedef struct {
    tm_gps_report_kind kind;
    /// gpsd's fix mode: 0 not seen, 1 no fix, 2 2D, 3 3D.
    int mode;
    bool has_time;
    /// The fix time exactly as gpsd's JSON gave it (ISO-8601 UTC, its fractional digits).
    char time[48];
    int64_t time_seconds;
    int32_t time_nanoseconds;
    bool has_position;
    double latitude;
    double longitude;
    bool has_altitude_hae;
    double altitude_hae;
    bool has_altitude_msl;
    double altitude_msl;
    bool has_speed;
    double speed;
    bool has_track;
    double track;
    bool has_climb;
    double climb;
    bool has_eph;
    double eph;
    bool has_epx;
    double epx;
    bool has_epy;
    double epy;
    bool has_epv;
    double epv;
    /// DEVICE: whether the device is active (opened) after this message.
    bool device_activated;
    /// DEVICES: how many devices gpsd has active.
    int device_count;
} tm_gps_report;

/// Connects to gpsd. Returns 0 and sets `*out`, or a negative gpsd error code (see
/// `tm_gps_errstr`) and leaves `*out` NULL.
int tm_gps_open(const char *host, const char *port, tm_gps_session **out);

/// Asks gpsd to stream JSON reports (WATCH_ENABLE | WATCH_JSON). Returns 0 or -1.
int tm_gps_watch(tm_gps_session *session);

/// Waits up to `microseconds` for data. Returns 1 if a read would not block, 0 on timeout,
/// -1 on error (errno set).
int tm_gps_waiting(tm_gps_session *session, int microseconds);

/// Reads one report into `*report`. Returns 1 when a report was read, 0 when no complete
/// report was available, -1 when the connection failed or gpsd closed it.
int tm_gps_read(tm_gps_session *session, tm_gps_report *report);

/// The report one line from gpsd (`length` bytes of JSON, no NUL needed) makes, through the same
/// parser (libgps's `gps_unpack`) and the same copy as `tm_gps_read`, without a connection: for
/// tests and the fuzzer. Returns 0, or -1 when out of memory.
int tm_gps_unpack(const char *line, size_t length, tm_gps_report *report);

/// Closes the connection and frees the session. Safe with NULL.
void tm_gps_close(tm_gps_session *session);

/// gpsd's text for an error code from `tm_gps_open`.
const char *tm_gps_errstr(int code);

#ifdef __cplusplus
}
#endif

#endif
