#!/usr/bin/env python3
"""Synthetic taxi rides in the format of the ECML/PKDD 2015 Porto taxi data set.

Writes a CSV with the data set's header and quoting
(TRIP_ID,CALL_TYPE,ORIGIN_CALL,ORIGIN_STAND,TAXI_ID,TIMESTAMP,DAY_TYPE,MISSING_DATA,POLYLINE),
one occupied ride a row, POLYLINE a JSON list of [lon, lat] 15 s apart, with what real
recordings have and invented crowds lack:

- rides of one taxi a minute apart (back to back), some starting far from the last drop-off;
- GPS jumps: single points thrown kilometres off (up to 900 m/s from the point before);
- a row with MISSING_DATA True, one with an empty polyline and one with broken JSON.

Nothing here comes from the real data set: positions are random walks around Porto's centre.
The same arguments and seed give the same file.

    python3 simulations/traces/make-porto-trips.py --taxis 10 --rides 30 --hours 1.5 \
        --seed 7 > simulations/traces/fleet/porto-sample.csv
    python3 simulations/traces/make-porto-trips.py --taxis 300 --rides 1000 --hours 9 \
        --seed 9 > /tmp/porto-300.csv
"""

import argparse
import json
import math
import random
import sys

CENTRE = (41.1579, -8.6291)  # Porto, (lat, lon)
STEP_S = 15
METRES_PER_DEGREE = 111_320.0


def move(point, metres, bearing):
    lat, lon = point
    dlat = metres * math.cos(bearing) / METRES_PER_DEGREE
    dlon = metres * math.sin(bearing) / (METRES_PER_DEGREE * math.cos(math.radians(lat)))
    return (lat + dlat, lon + dlon)


def ride_points(rng, start, count):
    """A random walk at 4-14 m/s, turning gently, kept within ~6 km of the centre."""
    points = [start]
    bearing = rng.uniform(0, 2 * math.pi)
    for _ in range(count - 1):
        bearing += rng.gauss(0, 0.5)
        lat, lon = points[-1]
        if math.hypot((lat - CENTRE[0]) * METRES_PER_DEGREE, (lon - CENTRE[1]) * METRES_PER_DEGREE * 0.75) > 6000:
            bearing = math.atan2(CENTRE[1] - lon, CENTRE[0] - lat)
        points.append(move(points[-1], rng.uniform(4, 14) * STEP_S, bearing))
    return points


def near_centre(rng, radius):
    return move(CENTRE, rng.uniform(0, radius), rng.uniform(0, 2 * math.pi))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--taxis", type=int, default=10)
    parser.add_argument("--rides", type=int, default=30)
    parser.add_argument("--hours", type=float, default=1.5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--start", type=int, default=1372636800, help="Unix seconds of the first minute (2013-07-01 00:00 UTC)")
    parser.add_argument("--jump-fraction", type=float, default=0.08, help="share of rides with a GPS jump")
    parser.add_argument("--back-to-back", type=float, default=0.15, help="share of rides followed a minute later by the same taxi's next")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    span = int(args.hours * 3600)

    # Rides per taxi: every taxi at least one, the rest drawn.
    counts = [1] * args.taxis
    for _ in range(max(0, args.rides - args.taxis)):
        counts[rng.randrange(args.taxis)] += 1

    rows = []
    for number, count in enumerate(counts):
        taxi_id = 20000001 + number
        lengths = [rng.randint(12, 80) for _ in range(count)]  # points: 3-20 min
        busy = sum((n - 1) * STEP_S for n in lengths)
        free = max(60 * count, span - busy)
        t = args.start + rng.randint(0, max(1, free // (count + 1)))
        position = near_centre(rng, 3000)
        for n in lengths:
            points = ride_points(rng, position, n)
            if rng.random() < args.jump_fraction and n >= 6:
                # One point thrown off, never the first (a ride's start is taken as it comes) nor
                # the last two (the drop-off is what the board keeps between rides).
                k = rng.randint(2, n - 3)
                points[k] = move(points[k - 1], rng.uniform(1500, 900 * STEP_S), rng.uniform(0, 2 * math.pi))
            trip_id = "%d%d" % (t, taxi_id)
            call = rng.choice("ABC")
            rows.append([trip_id, call, str(rng.randint(2000, 60000)) if call == "A" else "",
                         str(rng.randint(1, 63)) if call == "B" else "", str(taxi_id), str(t), "A", "False",
                         json.dumps([[round(lon, 6), round(lat, 6)] for lat, lon in points], separators=(",", ":"))])
            end = t + (n - 1) * STEP_S
            last = points[-1]
            if rng.random() < args.back_to_back:
                t = end + 60
                # Sometimes the next fare is picked up far away: a new ride, not a jump.
                position = move(last, rng.uniform(200, 6000), rng.uniform(0, 2 * math.pi))
            else:
                t = end + max(60, int(rng.uniform(0.3, 1.7) * free / (count + 1)))
                position = move(last, rng.uniform(0, 1500), rng.uniform(0, 2 * math.pi))

    # What a real file also holds: rows the replay must skip, counted.
    t = args.start + 600
    rows.append(["%d20000001" % (t + 1), "C", "", "", "20000001", str(t + 1), "A", "True",
                 json.dumps([[CENTRE[1], CENTRE[0]], [CENTRE[1] + 0.001, CENTRE[0]]])])
    rows.append(["%d20000002" % (t + 2), "B", "", "15", "20000002", str(t + 2), "A", "False", "[]"])
    rows.append(["%d20000003" % (t + 3), "C", "", "", "20000003", str(t + 3), "A", "False", "[[-8.61,41.15],[-8.612"])
    rows.sort(key=lambda row: int(row[5]))

    out = sys.stdout
    out.write('"TRIP_ID","CALL_TYPE","ORIGIN_CALL","ORIGIN_STAND","TAXI_ID","TIMESTAMP","DAY_TYPE","MISSING_DATA","POLYLINE"\n')
    for row in rows:
        out.write(",".join('"%s"' % field.replace('"', '""') for field in row) + "\n")


if __name__ == "__main__":
    main()
