// A flat C API over the kernel's input layer (linux/input.h) for Swift.
//
// `struct input_event` holds a `struct timeval` whose layout depends on the C library's time_t
// (and the EVIOCGBIT ioctl number is a macro Swift cannot import), so neither crosses into Swift:
// each read copies the three fields the agent needs into `tm_input_event`.
#ifndef TM_INPUT_SHIM_H
#define TM_INPUT_SHIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One input event: `type` EV_KEY (1) with `value` 1 = pressed, 0 = released, 2 = autorepeat.
typedef struct {
    uint16_t type;
    uint16_t code;
    int32_t value;
} tm_input_event;

/// EV_KEY, so Swift need not know linux/input-event-codes.h.
#define TM_INPUT_EV_KEY 1

/// Opens an event device (or any file or FIFO carrying `struct input_event`s) read-only,
/// non-blocking, close-on-exec. Returns the descriptor, or -errno.
int tm_input_open(const char *path);

/// Waits up to `timeout_ms` for events and reads up to `capacity` of them into `events`.
/// Returns how many were read (0: none within the timeout), or -errno; -ENODEV when the device
/// went away (unplugged), 0 with `*ended` set to 1 at the end of a file or FIFO. Retries EINTR.
int tm_input_read(int fd, int timeout_ms, tm_input_event *events, int capacity, int *ended);

/// 1 if the device says it can report key `code` (EVIOCGBIT), 0 if not, -errno if the
/// descriptor is not an event device (a FIFO in tests: the caller then trusts the code).
int tm_input_has_key(int fd, uint16_t code);

/// Writes one `struct input_event` (time zero) to `fd`: a test's FIFO, or a uinput device.
/// Returns 0, or -errno.
int tm_input_write(int fd, uint16_t type, uint16_t code, int32_t value);

/// The size of the kernel's `struct input_event` here (24 bytes on LP64).
int tm_input_event_size(void);

#ifdef __cplusplus
}
#endif

#endif
