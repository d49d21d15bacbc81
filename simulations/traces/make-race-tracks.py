#!/usr/bin/env python3
"""Makes synthetic GPX 1.1 runner tracks of a mass-start race on one park loop, as watches
record them: 1 Hz points with <time>, GPS noise that wanders slowly (a receiver's error is
correlated from one second to the next, not drawn afresh: a fresh 3 m error each second would
add more distance than the runner ran), a few watch gaps of 20-47 s with no point at all, and a
few GPS jumps of hundreds of metres lasting one to three points. Not recordings: the class of
thing a real race gives, made so that tests and scenarios can be checked against it.

The loop is a lollipop: a 200 m street from the start out to a ring of about 600 m, and back
along the same street, so every lap uses the street twice (out and back). The course written
is one lap; runners run as far as they run, lap after lap.

    python3 make-race-tracks.py --out race --runners 30 --minutes 3 7 --km 0.8 2.4
    python3 make-race-tracks.py --out /tmp/race45 --runners 30 --minutes 14 44 --km 2.2 5.4

Writes DIR/course.gpx and DIR/runner-NN.gpx; the same seed gives the same files.
"""
import argparse
import datetime
import math
import os
import random

# Somewhere in a park (Parque da Cidade, Porto); only the shape matters.
ORIGIN_LAT = 41.16950
ORIGIN_LON = -8.67650
METRES_PER_DEGREE = 6371008.8 * math.pi / 180
STEM_M = 200.0
RING_RADIUS_M = 95.0


def lap_points(step=5.0):
    """One lap as local (east, north) metres: out along the stem, round the ring, back."""
    out = [(x, 0.0) for x in frange(0, STEM_M, step)]
    ring = []
    centre = (STEM_M + RING_RADIUS_M, 0.0)
    n = int(2 * math.pi * RING_RADIUS_M / step)
    for i in range(n + 1):
        a = math.pi - 2 * math.pi * i / n  # from the stem's end, round and back to it
        ring.append((centre[0] + RING_RADIUS_M * math.cos(a), centre[1] + RING_RADIUS_M * math.sin(a)))
    back = [(x, 0.0) for x in frange(STEM_M, 0, -step)]
    return out + ring + back


def frange(a, b, step):
    values = []
    x = a
    while (step > 0 and x < b) or (step < 0 and x > b):
        values.append(x)
        x += step
    return values


def cumulative(points):
    total = [0.0]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        total.append(total[-1] + math.hypot(x1 - x0, y1 - y0))
    return total


def at(points, cum, metres):
    """The point `metres` along repeated laps."""
    lap = cum[-1]
    m = metres % lap
    lo, hi = 0, len(cum) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cum[mid] <= m:
            lo = mid
        else:
            hi = mid
    span = cum[hi] - cum[lo]
    f = (m - cum[lo]) / span if span > 0 else 0
    (x0, y0), (x1, y1) = points[lo], points[hi]
    return x0 + (x1 - x0) * f, y0 + (y1 - y0) * f, math.atan2(y1 - y0, x1 - x0)


def to_lat_lon(east, north):
    lat = ORIGIN_LAT + north / METRES_PER_DEGREE
    lon = ORIGIN_LON + east / (METRES_PER_DEGREE * math.cos(math.radians(ORIGIN_LAT)))
    return lat, lon


def gpx(name, points):
    """points: (lat, lon, datetime or None)."""
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<gpx version="1.1" creator="make-race-tracks.py (synthetic)" xmlns="http://www.topografix.com/GPX/1/1">',
        f"<trk><name>{name}</name><trkseg>",
    ]
    for lat, lon, t in points:
        time = f"<time>{t.strftime('%Y-%m-%dT%H:%M:%SZ')}</time>" if t else ""
        lines.append(f'<trkpt lat="{lat:.6f}" lon="{lon:.6f}">{time}</trkpt>')
    lines.append("</trkseg></trk>")
    lines.append("</gpx>")
    return "\n".join(lines) + "\n"


def runner_track(rng, points, cum, seconds, metres, start, gap, jump):
    """1 Hz points of one runner: (lat, lon, time)."""
    speed = metres / seconds
    lane = rng.uniform(-2.5, 2.5)  # which side of the path they keep to
    swing_period = rng.uniform(120, 400)
    swing_phase = rng.uniform(0, 2 * math.pi)
    # Ornstein-Uhlenbeck error per axis: sigma 2.5 m, correlation time 25 s; plus 0.3 m white.
    sigma, tau = 2.5, 25.0
    a = math.exp(-1 / tau)
    b = sigma * math.sqrt(1 - a * a)
    ex, ey = rng.gauss(0, sigma), rng.gauss(0, sigma)
    run = 0.0
    track = []
    jump_at, jump_len, jump_dx, jump_dy = jump if jump else (-1, 0, 0, 0)
    for t in range(seconds + 1):
        if t > 0:
            run += speed * (1 + 0.05 * math.sin(2 * math.pi * t / swing_period + swing_phase))
        ex, ey = a * ex + b * rng.gauss(0, 1), a * ey + b * rng.gauss(0, 1)
        if gap and gap[0] <= t < gap[0] + gap[1]:
            continue
        x, y, heading = at(points, cum, run)
        # Keep to one side of the path (left of the direction of travel).
        x += -math.sin(heading) * lane + ex + rng.gauss(0, 0.3)
        y += math.cos(heading) * lane + ey + rng.gauss(0, 0.3)
        if jump_at <= t < jump_at + jump_len:
            x += jump_dx
            y += jump_dy
        lat, lon = to_lat_lon(x, y)
        track.append((lat, lon, start + datetime.timedelta(seconds=t)))
    return track


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--runners", type=int, default=30)
    parser.add_argument("--minutes", type=float, nargs=2, default=[14, 44])
    parser.add_argument("--km", type=float, nargs=2, default=[2.2, 5.4])
    parser.add_argument("--gaps", type=int, default=5, help="runners with one watch gap of 20-47 s")
    parser.add_argument("--jumps", type=int, default=5, help="runners with one GPS jump of 200-700 m")
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--start", default="2026-05-10T09:00:00")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    points = lap_points()
    cum = cumulative(points)
    os.makedirs(args.out, exist_ok=True)
    course = [to_lat_lon(x, y) + (None,) for x, y in points]
    with open(os.path.join(args.out, "course.gpx"), "w") as f:
        f.write(gpx(f"Park lollipop {cum[-1] / 1000:.2f} km (one lap)", course))
    gun = datetime.datetime.fromisoformat(args.start)
    order = list(range(args.runners))
    rng.shuffle(order)
    with_gap = set(order[: args.gaps])
    with_jump = set(order[args.gaps : args.gaps + args.jumps])
    for i in range(args.runners):
        seconds = int(rng.uniform(args.minutes[0], args.minutes[1]) * 60)
        # A runner's speed stays in 2.2-5.5 m/s: the distance follows from it when the drawn
        # distance and duration would not fit.
        metres = rng.uniform(args.km[0], args.km[1]) * 1000
        metres = min(max(metres, 2.2 * seconds), 5.5 * seconds)
        # Watches started a few seconds apart before the gun.
        start = gun + datetime.timedelta(seconds=rng.randint(0, 15))
        gap = (rng.randint(seconds // 4, seconds // 2), rng.randint(20, 47)) if i in with_gap else None
        jump = None
        if i in with_jump:
            angle = rng.uniform(0, 2 * math.pi)
            size = rng.uniform(200, 700)
            jump = (rng.randint(seconds // 5, 4 * seconds // 5), rng.randint(1, 3), size * math.cos(angle), size * math.sin(angle))
        track = runner_track(rng, points, cum, seconds, metres, start, gap, jump)
        name = f"runner-{i + 1:02d}"
        with open(os.path.join(args.out, name + ".gpx"), "w") as f:
            f.write(gpx(name, track))


if __name__ == "__main__":
    main()
