#!/usr/bin/env python3
"""Derives a slowed heart-rate trace from a recorded one (simulations/traces/hr/SOURCES.md,
"Derived by time-scaling"): every RR interval of the source is multiplied by FACTOR, so the
rhythm (its variability, its premature beats) is the recording's and the rate is FACTOR times
slower, then the 1 Hz strap emulation of SOURCES.md is applied again to the scaled beat times.

Used for the sleeping athlete of the learned-baseline scenarios: nobody recorded a healthy
resting rate near 40 bpm among the shared traces. The result is NOT a recording at that rate.

    python3 derive-slowed-trace.py hr/mitdb100_normal_sinus.csv 1.85 > hr/derived_mitdb100_slowed_1_85.csv
"""
import sys


def beats_from_trace(path):
    """Beat times (ms) rebuilt from the RR intervals of the trace's rows, in order."""
    rrs = []
    with open(path) as f:
        next(f)
        for line in f:
            t, bpm, rr, contact = line.rstrip("\n").split(",")
            if contact != "yes":
                raise SystemExit(f"{path}: contact other than yes at {t} ms; this derivation keeps contact throughout")
            rrs += [int(x) for x in rr.split()]
    times = [0.0]
    for rr in rrs:
        times.append(times[-1] + rr)
    return times


def emulate(times):
    """SOURCES.md's strap emulation: one row per whole second from the first whole second
    after the second beat; rr = intervals of beats in the preceding second; bpm from the mean
    of the last <= 4 RR, the still-open interval replacing the oldest when longer than the last."""
    rows = []
    second = int(times[1] // 1000) + 1
    last_beat_index = 1
    window = [times[1] - times[0]]
    end = times[-1]
    while second * 1000 <= end:
        now = second * 1000
        rr_in_second = []
        while last_beat_index + 1 < len(times) and times[last_beat_index + 1] <= now:
            rr = times[last_beat_index + 1] - times[last_beat_index]
            rr_in_second.append(rr)
            window = (window + [rr])[-4:]
            last_beat_index += 1
        effective = list(window)
        open_interval = now - times[last_beat_index]
        if open_interval > effective[-1]:
            effective = effective[1:] + [open_interval] if len(effective) == 4 else effective + [open_interval]
        bpm = round(60000 / (sum(effective) / len(effective)))
        rows.append((now, bpm, " ".join(str(round(r)) for r in rr_in_second)))
        second += 1
    return rows


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    source, factor = sys.argv[1], float(sys.argv[2])
    times = [t * factor for t in beats_from_trace(source)]
    print("t_ms,bpm,rr_ms,contact")
    for t, bpm, rr in emulate(times):
        print(f"{t},{bpm},{rr},yes")


if __name__ == "__main__":
    main()
