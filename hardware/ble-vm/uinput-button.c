// A push button with an LED, made with the kernel's uinput, for the BLE VM's check 8-button.
//
//   uinput-button KEYCODE
//
// Creates the input device "trackme-test-button" that reports key KEYCODE (EV_KEY) and has the
// LEDs NUML and CAPSL (EV_LED). The kernel then gives it an event node, /dev/input/eventN (evdev),
// and, through input-leds, LED-class devices /sys/class/leds/inputN::numlock and ::capslock whose
// brightness writes come back here as EV_LED events. Prints one line when ready:
//   ready event=/dev/input/eventN led=inputN::numlock
// then reads commands from stdin, one a line: "down" / "up" (the key, each followed by
// SYN_REPORT), "mark" (prints "mark MS"), "quit". Every event the kernel sends back is printed as
//   led CODE VALUE MS         (EV_LED; MS: CLOCK_MONOTONIC milliseconds)
// and every command it carried out as "key VALUE MS", so a test compares both on one clock.
// Exits at end of input or "quit" (the device is destroyed). Built static on the host
// (run-checks.sh): the VM image has no compiler.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/uinput.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void die(const char *what) {
    fprintf(stderr, "uinput-button: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void emit(int fd, int type, int code, int value) {
    struct input_event e;
    memset(&e, 0, sizeof(e));
    e.type = type;
    e.code = code;
    e.value = value;
    if (write(fd, &e, sizeof(e)) != (ssize_t)sizeof(e)) die("write /dev/uinput");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: uinput-button KEYCODE\n");
        return 2;
    }
    int key = atoi(argv[1]);
    int fd = open("/dev/uinput", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) die("open /dev/uinput");
    if (ioctl(fd, UI_SET_EVBIT, EV_KEY) < 0 || ioctl(fd, UI_SET_KEYBIT, key) < 0) die("UI_SET_KEYBIT");
    if (ioctl(fd, UI_SET_EVBIT, EV_LED) < 0 || ioctl(fd, UI_SET_LEDBIT, LED_NUML) < 0 ||
        ioctl(fd, UI_SET_LEDBIT, LED_CAPSL) < 0)
        die("UI_SET_LEDBIT");
    struct uinput_setup setup;
    memset(&setup, 0, sizeof(setup));
    setup.id.bustype = BUS_VIRTUAL;
    setup.id.vendor = 0x7472;  // "tr"
    setup.id.product = 0x0001;
    strcpy(setup.name, "trackme-test-button");
    if (ioctl(fd, UI_DEV_SETUP, &setup) < 0) die("UI_DEV_SETUP");
    if (ioctl(fd, UI_DEV_CREATE) < 0) die("UI_DEV_CREATE");
    char sysname[64] = {0};
    if (ioctl(fd, UI_GET_SYSNAME(sizeof(sysname) - 1), sysname) < 0) die("UI_GET_SYSNAME");

    // evdev binds the device asynchronously to creation: wait up to 5 s for its eventN.
    char dir[160], event[sizeof(((struct dirent *)0)->d_name)] = {0};
    snprintf(dir, sizeof(dir), "/sys/devices/virtual/input/%s", sysname);
    for (int i = 0; i < 500 && !event[0]; i++) {
        DIR *d = opendir(dir);
        if (!d) die(dir);
        struct dirent *entry;
        while ((entry = readdir(d)) != NULL)
            if (strncmp(entry->d_name, "event", 5) == 0) snprintf(event, sizeof(event), "%s", entry->d_name);
        closedir(d);
        if (!event[0]) usleep(10000);
    }
    if (!event[0]) {
        fprintf(stderr, "uinput-button: %s has no event node (evdev not loaded?)\n", dir);
        return 1;
    }
    printf("ready event=/dev/input/%s led=%s::numlock\n", event, sysname);
    fflush(stdout);

    char line[64];
    size_t used = 0;
    for (;;) {
        struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = fd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            die("poll");
        }
        if (p[1].revents & POLLIN) {
            struct input_event e[16];
            ssize_t n = read(fd, e, sizeof(e));
            for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof(e[0]); i++)
                if (e[i].type == EV_LED) printf("led %d %d %lld\n", e[i].code, e[i].value, now_ms());
            fflush(stdout);
        }
        if (p[0].revents & (POLLIN | POLLHUP)) {
            ssize_t n = read(0, line + used, sizeof(line) - 1 - used);
            if (n <= 0) break;
            used += (size_t)n;
            line[used] = 0;
            char *nl;
            int quit = 0;
            while ((nl = strchr(line, '\n')) != NULL) {
                *nl = 0;
                if (strcmp(line, "down") == 0 || strcmp(line, "up") == 0) {
                    int value = line[0] == 'd';
                    emit(fd, EV_KEY, key, value);
                    emit(fd, EV_SYN, SYN_REPORT, 0);
                    printf("key %d %lld\n", value, now_ms());
                    fflush(stdout);
                } else if (strcmp(line, "mark") == 0) {
                    printf("mark %lld\n", now_ms());
                    fflush(stdout);
                } else if (strcmp(line, "quit") == 0) {
                    quit = 1;
                } else {
                    fprintf(stderr, "uinput-button: unknown command '%s'\n", line);
                }
                used -= (size_t)(nl + 1 - line);
                memmove(line, nl + 1, used + 1);
            }
            if (quit) break;
            if (used == sizeof(line) - 1) used = 0;  // an overlong line: dropped
        }
    }
    ioctl(fd, UI_DEV_DESTROY);
    close(fd);
    return 0;
}
