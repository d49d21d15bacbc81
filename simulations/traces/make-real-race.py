#!/usr/bin/env python3
"""Makes traces/race-real/: a mass-start race of 30 runners whose tracks are real recordings,
cut from running activities that public, freely licensed packages ship as test data (see
race-real/NOTICE.txt and race-real/SOURCES for each file, its licence and its checksum):

    GoldenCheetah 3.5 (Debian source package goldencheetah_3.5.orig.tar.gz, GPL):
        test/rides/Garmin920_withFirstbeat.fit   Garmin Forerunner 920XT, 35 min run
        test/rides/IpBike-HRV-Data.fit           IpBike (Android phone), 46 min run with intervals
        test/rides/HRV-Data.fit                  Stryd, 71 min easy run
        test/rides/MultiSport-2019-11-24.fit     Garmin fenix 5X, a triathlon; its 5.5 h run leg
    sweat 0.25.0 (PyPI sdist sweat-0.25.0.tar.gz, MIT):
        sweat/examples/data/3173437224.tcx       Polar M400, 65 min run on snowy hills

Each runner is one window of 8-10 minutes of one recording; no two windows overlap, so the 30
runners are 30 different stretches of real running, five recordings between them. Within a
window every fix is kept as the watch wrote it (1 Hz; a second the watch wrote no fix stays
without one, so a gap stays a gap); nothing is smoothed, filtered, resampled or re-timed.

The recordings were made in five places (Geneva, Lisbon twice, Cozumel, the Vosges). A mass
start needs one start, so every window is moved rigidly to a common start: each fix keeps its
great-circle distance and bearing from the window's first fix (an azimuthal equidistant
placement about the start), so the shape, the noise, the gaps and the distances stay as
recorded (to well under a millimetre over a few kilometres) while the first fix of every
runner sits on the start. A plain shift of latitude and longitude would not do that: a degree
of longitude is 17 % shorter at Geneva than at Cozumel. The times stay the recording's own
UTC times; the scenario's `"align": "start"` puts every first fix on the gun.

    python3 make-real-race.py --goldencheetah goldencheetah_3.5.orig.tar.gz \\
        --sweat sweat-0.25.0.tar.gz --out race-real

Where the two archives come from (Debian's archive and PyPI, through their own clients):

    apt-get source --download-only goldencheetah    # needs a deb-src line for bookworm main
    pip download --no-deps --no-binary sweat sweat==0.25.0

Each archive member is checked against the SHA-256 in SOURCE_FILES before it is read. Writes
OUT/runner-NN.gpx (GPX 1.1, <trkpt lat lon><time>), OUT/course.gpx (the map's course: runner
01's own window up to the race distance), and OUT/runner-30.nmea from runner 30's GPX through
gpx-to-nmea.py (GGA+RMC at 1 Hz as gpsfake replays a receiver's log; its watch gap is written
as seconds without a fix), then removes that GPX. FIT files are read by the small reader
below (stdlib only): definition and data messages, compressed-timestamp headers, developer
fields skipped, chained files; only `record` (position, timestamp) and `session` (start, sport,
elapsed time) messages are used.
"""
import argparse
import datetime
import hashlib
import math
import os
import struct
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET

# The common start: the synthetic race's start (Parque da Cidade, Porto); only the shape matters.
START_LAT = 41.16950
START_LON = -8.67650
EARTH_RADIUS_M = 6371008.8
RACE_DISTANCE_M = 1000.0

# Archive member, SHA-256 of the member, what recorded it, the activity it holds.
SOURCE_FILES = {
    "fr920": (
        "goldencheetah",
        "GoldenCheetah-3.5/test/rides/Garmin920_withFirstbeat.fit",
        "862795a6803c00f23383f761411d21ca8758a9f1572d4dcf6f20cf10544e1595",
        "Garmin Forerunner 920XT, FIT, sport running, 2019-01-01, 35.4 min, 7.3 km",
    ),
    "ipbike": (
        "goldencheetah",
        "GoldenCheetah-3.5/test/rides/IpBike-HRV-Data.fit",
        "e547ba20c911712fa5763fc4e8f3ed57df1995e5d43f98607fcc50dfd1d4bfa4",
        "IpBike (Android app), FIT, sport running, 2017-03-02, 46.0 min, 9.3 km, intervals",
    ),
    "stryd": (
        "goldencheetah",
        "GoldenCheetah-3.5/test/rides/HRV-Data.fit",
        "686414304d8d493d89a024ac287f13fafb8265932cb223354883ad25669b8dba",
        "Stryd, FIT, sport running, 2017-03-04, 70.7 min, 8.2 km, easy pace",
    ),
    "fenix": (
        "goldencheetah",
        "GoldenCheetah-3.5/test/rides/MultiSport-2019-11-24.fit",
        "aaf2c7562eedda2a1f49fba04446c821a29d00e7c3bba088dab8f32ec3c5c96e",
        "Garmin fenix 5X, FIT, multisport 2019-11-24 (swim, bike, run); run session 330.8 min, 34.7 km",
    ),
    "m400": (
        "sweat",
        "sweat-0.25.0/sweat/examples/data/3173437224.tcx",
        "fa4ca12c82883f91a5463eb5d527a20f97d6eeb8a12f901a1913b6662b3614cf",
        "Polar M400, TCX, Activity Sport=Running ('Hardlopen'), 2019-01-29, 65.1 min, 4.7 km",
    ),
}

# The runners: (source, window start in seconds after the first fix of the source's running
# session, window length in seconds). Windows of one source never overlap.
WINDOWS = (
    [("fr920", start, 600) for start in (0, 720, 1440)]
    + [("ipbike", start, 600) for start in (0, 660, 1320, 1980)]
    + [("stryd", start, 600) for start in (0, 720, 1440, 2160, 2880, 3600)]
    + [("m400", 2880, 480)]
    # The triathlon's run leg: 15 windows through its first three hours, and one across the
    # watch's 188 s without a fix at 200 min (kept as a gap).
    + [("fenix", start, 600) for start in range(360, 360 + 15 * 720, 720)]
    + [("fenix", 11700, 600)]
)
NMEA_RUNNER = 30

FIT_EPOCH = 631065600  # 1989-12-31T00:00:00Z in Unix seconds
FIT_SPORTS = {0: "generic", 1: "running", 2: "cycling", 3: "transition", 5: "swimming"}
# FIT base type number (base type & 0x1F) -> struct code; arrays, strings and floats are skipped.
FIT_BASE = {0: "B", 1: "b", 2: "B", 3: "h", 4: "H", 5: "i", 6: "I", 10: "B", 11: "H", 12: "I", 13: "B", 14: "q", 15: "Q", 16: "Q"}


def read_fit(data):
    """(records, sessions): records as (unix s, lat, lon) for every `record` message with a
    position and a time, in file order; sessions as (start unix s, sport, elapsed s)."""
    records, sessions = [], []
    pos = 0
    while pos + 12 <= len(data):
        header_size = data[pos]
        data_size = struct.unpack_from("<I", data, pos + 4)[0]
        if data[pos + 8:pos + 12] != b".FIT":
            raise ValueError(f"no .FIT signature at byte {pos}")
        end = pos + header_size + data_size
        pos += header_size
        definitions = {}
        last_time = None
        while pos < end:
            header = data[pos]
            pos += 1
            if header & 0x80:  # compressed timestamp header: a data message 0-31 s after the last time
                definition = definitions[(header >> 5) & 0x3]
                values, pos = fit_values(data, pos, definition)
                if last_time is not None and 253 not in values:
                    offset = header & 0x1F
                    values[253] = (last_time & ~0x1F) + offset + (0x20 if offset < (last_time & 0x1F) else 0)
                last_time = fit_collect(definition[0], values, records, sessions, last_time)
            elif header & 0x40:  # definition message
                endian = ">" if data[pos + 1] == 1 else "<"
                global_number = struct.unpack_from(endian + "H", data, pos + 2)[0]
                count = data[pos + 4]
                pos += 5
                fields = [tuple(data[pos + 3 * i:pos + 3 * i + 3]) for i in range(count)]
                pos += 3 * count
                developer_bytes = 0
                if header & 0x20:
                    developer_count = data[pos]
                    pos += 1
                    developer_bytes = sum(data[pos + 3 * i + 1] for i in range(developer_count))
                    pos += 3 * developer_count
                definitions[header & 0x0F] = (global_number, endian, fields, developer_bytes)
            else:
                definition = definitions[header & 0x0F]
                values, pos = fit_values(data, pos, definition)
                last_time = fit_collect(definition[0], values, records, sessions, last_time)
        pos = end + 2  # the CRC; another FIT file may follow
    return records, sessions


def fit_values(data, pos, definition):
    _, endian, fields, developer_bytes = definition
    values = {}
    for number, size, base in fields:
        code = FIT_BASE.get(base & 0x1F)
        if code is not None and struct.calcsize(code) == size:
            values[number] = struct.unpack_from(endian + code, data, pos)[0]
        pos += size
    return values, pos + developer_bytes


def fit_collect(global_number, values, records, sessions, last_time):
    time = values.get(253)
    if time is not None and time != 0xFFFFFFFF:
        last_time = time
    if global_number == 20:  # record: position_lat 0, position_long 1 (semicircles), timestamp 253
        lat, lon = values.get(0), values.get(1)
        if time is not None and lat not in (None, 0x7FFFFFFF) and lon not in (None, 0x7FFFFFFF):
            records.append((time + FIT_EPOCH, lat * 180.0 / 2**31, lon * 180.0 / 2**31))
    elif global_number == 18:  # session: start_time 2, sport 5, total_elapsed_time 7 (ms)
        start, sport, elapsed = values.get(2), values.get(5), values.get(7)
        sessions.append((start + FIT_EPOCH if start is not None else None, FIT_SPORTS.get(sport, sport), elapsed / 1000 if elapsed is not None else None))
    return last_time


def read_tcx(data):
    """(records, sessions) of a TCX file, as read_fit gives them: every Trackpoint with a
    Position and a Time; one session per Activity, from its first to its last Trackpoint."""
    ns = "{http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2}"
    root = ET.fromstring(data)
    records, sessions = [], []
    for activity in root.iter(ns + "Activity"):
        first = len(records)
        for point in activity.iter(ns + "Trackpoint"):
            time, lat, lon = point.find(ns + "Time"), point.find(f"{ns}Position/{ns}LatitudeDegrees"), point.find(f"{ns}Position/{ns}LongitudeDegrees")
            if time is None or lat is None or lon is None:
                continue
            when = datetime.datetime.fromisoformat(time.text.strip().replace("Z", "+00:00")).timestamp()
            records.append((when, float(lat.text), float(lon.text)))
        if len(records) > first:
            sport = (activity.get("Sport") or "").lower()
            sessions.append((records[first][0], sport, records[-1][0] - records[first][0]))
    return records, sessions


def running_fixes(records, sessions):
    """The fixes of the (last) running session, each strictly newer than the one before: a fix
    that repeats the time of the one before it is dropped (the count is returned)."""
    runs = [s for s in sessions if s[1] == "running"]
    if not runs:
        raise SystemExit("no running session in the recording")
    start, _, elapsed = runs[-1]
    fixes, repeated = [], 0
    for record in records:
        if start <= record[0] <= start + elapsed + 1:
            if fixes and record[0] <= fixes[-1][0]:
                repeated += 1
                continue
            fixes.append(record)
    return fixes, repeated


def distance_bearing(lat1, lon1, lat2, lon2):
    p1, p2, dl = math.radians(lat1), math.radians(lat2), math.radians(lon2 - lon1)
    h = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    d = 2 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(h)))
    bearing = math.atan2(math.sin(dl) * math.cos(p2), math.cos(p1) * math.sin(p2) - math.sin(p1) * math.cos(p2) * math.cos(dl))
    return d, bearing


def destination(lat, lon, metres, bearing):
    p1, l1, a = math.radians(lat), math.radians(lon), metres / EARTH_RADIUS_M
    p2 = math.asin(math.sin(p1) * math.cos(a) + math.cos(p1) * math.sin(a) * math.cos(bearing))
    l2 = l1 + math.atan2(math.sin(bearing) * math.sin(a) * math.cos(p1), math.cos(a) - math.sin(p1) * math.sin(p2))
    return math.degrees(p2), (math.degrees(l2) + 540) % 360 - 180


def move_to_start(fixes):
    """Every fix at its distance and bearing from the first fix, measured from the start instead."""
    _, lat0, lon0 = fixes[0]
    moved = []
    for t, lat, lon in fixes:
        d, b = distance_bearing(lat0, lon0, lat, lon)
        moved.append((t, *destination(START_LAT, START_LON, d, b)))
    return moved


def path_metres(fixes):
    return sum(distance_bearing(a[1], a[2], b[1], b[2])[0] for a, b in zip(fixes, fixes[1:]))


def iso(t):
    whole = int(t)
    text = datetime.datetime.fromtimestamp(whole, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    millis = round((t - whole) * 1000)
    return text + (f".{millis:03d}Z" if millis else "Z")


def gpx(name, fixes, creator, timed=True):
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<gpx version="1.1" creator="{creator}" xmlns="http://www.topografix.com/GPX/1/1">',
        f"<trk><name>{name}</name><trkseg>",
    ]
    for t, lat, lon in fixes:
        time = f"<time>{iso(t)}</time>" if timed else ""
        lines.append(f'<trkpt lat="{lat:.7f}" lon="{lon:.7f}">{time}</trkpt>')
    lines += ["</trkseg></trk>", "</gpx>", ""]
    return "\n".join(lines)


def member(archives, source):
    archive_key, path, sha256, _ = SOURCE_FILES[source]
    with tarfile.open(archives[archive_key]) as tar:
        data = tar.extractfile(path).read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise SystemExit(f"{archives[archive_key]}:{path}: SHA-256 {digest}, expected {sha256}")
    return data


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--goldencheetah", required=True, help="goldencheetah_3.5.orig.tar.gz")
    parser.add_argument("--sweat", required=True, help="sweat-0.25.0.tar.gz")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    archives = {"goldencheetah": args.goldencheetah, "sweat": args.sweat}
    os.makedirs(args.out, exist_ok=True)

    recordings = {}
    for source in SOURCE_FILES:
        data = member(archives, source)
        records, sessions = read_tcx(data) if SOURCE_FILES[source][1].endswith(".tcx") else read_fit(data)
        recordings[source] = running_fixes(records, sessions)

    rows = []
    for number, (source, offset, length) in enumerate(WINDOWS, start=1):
        fixes, repeated = recordings[source]
        t0 = fixes[0][0]
        window = [f for f in fixes if t0 + offset <= f[0] < t0 + offset + length]
        moved = move_to_start(window)
        name = f"runner-{number:02d}"
        with open(os.path.join(args.out, name + ".gpx"), "w") as out:
            out.write(gpx(name, moved, f"make-real-race.py (recorded: {SOURCE_FILES[source][1].rsplit('/', 1)[-1]}, moved to a common start)"))
        before, after = path_metres(window), path_metres(moved)
        # The move is a rotation of the sphere: every step keeps its length.
        worst = max((abs(distance_bearing(a[1], a[2], b[1], b[2])[0] - distance_bearing(c[1], c[2], d[1], d[2])[0])
                     for a, b, c, d in zip(window, window[1:], moved, moved[1:])), default=0.0)
        if worst > 1e-3:
            raise SystemExit(f"{name}: a step changed length by {worst} m when moved")
        gaps = [(round(a[0] - window[0][0]), round(b[0] - a[0])) for a, b in zip(window, window[1:]) if b[0] - a[0] >= 2]
        rows.append((name, source, offset, length, len(window), before, after, gaps, repeated if source == "ipbike" else 0))
        if number == 1:
            course, run = [moved[0]], 0.0
            for a, b in zip(moved, moved[1:]):
                run += distance_bearing(a[1], a[2], b[1], b[2])[0]
                course.append(b)
                if run >= RACE_DISTANCE_M:
                    break
            with open(os.path.join(args.out, "course.gpx"), "w") as out:
                out.write(gpx(f"Course for the map: runner-01's recording to {run:.0f} m", course, "make-real-race.py", timed=False))

    nmea_gpx = os.path.join(args.out, f"runner-{NMEA_RUNNER:02d}.gpx")
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpx-to-nmea.py")
    with open(os.path.join(args.out, f"runner-{NMEA_RUNNER:02d}.nmea"), "w") as out:
        subprocess.run([sys.executable, tool, nmea_gpx], stdout=out, check=True)
    os.remove(nmea_gpx)

    print(f"{'runner':10} {'source':7} {'from s':>6} {'len s':>5} {'fixes':>5} {'recorded m':>10} {'moved m':>9}  gaps (s after window start, s long)")
    for name, source, offset, length, count, before, after, gaps, _ in rows:
        print(f"{name:10} {source:7} {offset:6d} {length:5d} {count:5d} {before:10.1f} {after:9.1f}  {gaps}")


if __name__ == "__main__":
    main()
