// Data path, step 3 (the wearer's SOS button): Linux input events and LED writes over <linux/input.h>.

#include "tm_input_shim.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/input.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int tm_input_open(const char *path) {
    int fd;
    do {
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

int tm_input_read(int fd, int timeout_ms, tm_input_event *events, int capacity, int *ended) {
    *ended = 0;
    if (capacity <= 0) return 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int ready;
    do {
        ready = poll(&p, 1, timeout_ms);
    } while (ready < 0 && errno == EINTR);
    if (ready < 0) return -errno;
    if (ready == 0) return 0;
    if (p.revents & (POLLERR | POLLNVAL)) return -ENODEV;
    // A whole number of events per read: evdev never splits one; a FIFO writer writes whole ones.
    struct input_event raw[16];
    int want = capacity < 16 ? capacity : 16;
    ssize_t n;
    do {
        n = read(fd, raw, sizeof(raw[0]) * (size_t)want);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN) return 0;
        return -errno;
    }
    if (n == 0) {
        // End of file, or a FIFO whose writers all closed (POLLHUP).
        *ended = 1;
        return 0;
    }
    int count = (int)(n / (ssize_t)sizeof(raw[0]));
    for (int i = 0; i < count; i++) {
        events[i].type = raw[i].type;
        events[i].code = raw[i].code;
        events[i].value = raw[i].value;
    }
    return count;
}

int tm_input_has_key(int fd, uint16_t code) {
    unsigned char bits[KEY_MAX / 8 + 1];
    memset(bits, 0, sizeof(bits));
    if (code > KEY_MAX) return 0;
    if (ioctl(fd, EVIOCGBIT(EV_KEY, sizeof(bits)), bits) < 0) return -errno;
    return (bits[code / 8] >> (code % 8)) & 1;
}

int tm_input_write(int fd, uint16_t type, uint16_t code, int32_t value) {
    struct input_event event;
    memset(&event, 0, sizeof(event));
    event.type = type;
    event.code = code;
    event.value = value;
    ssize_t n;
    do {
        n = write(fd, &event, sizeof(event));
    } while (n < 0 && errno == EINTR);
    if (n < 0) return -errno;
    return n == (ssize_t)sizeof(event) ? 0 : -EIO;
}

int tm_input_event_size(void) { return (int)sizeof(struct input_event); }
