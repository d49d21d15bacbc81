#!/usr/bin/env python3
"""Derives an NMEA 0183 log from a GPX track, framed as gpsfake replays a receiver's capture:
one epoch a second, each a GGA then an RMC sentence with the epoch's UTC time, the position,
the speed and course over ground worked out from the neighbouring points, and valid checksums,
after the `#` header lines gpsfake's logs carry. A second with no track point (a watch gap) is
written as a receiver that has lost its fix (GGA quality 0, RMC status V, no position), so
gpsd and the harness see a gap, not a runner standing still.

    python3 gpx-to-nmea.py race/runner-17.gpx > race/runner-17.nmea
    gpsfake -c 1 race/runner-17.nmea      # gpsd then reports the track at 1 Hz

The GPX needs <trkpt lat lon> with <time> (UTC, whole seconds or with a fraction).
"""
import datetime
import math
import re
import sys

POINT = re.compile(r'<trkpt\s+lat="([-0-9.]+)"\s+lon="([-0-9.]+)"\s*>\s*<time>([^<]+)</time>', re.S)


def checksum(body):
    total = 0
    for ch in body.encode("ascii"):
        total ^= ch
    return f"{total:02X}"


def sentence(body):
    return f"${body}*{checksum(body)}"


def degrees_minutes(value, degree_digits, positive, negative):
    hemisphere = positive if value >= 0 else negative
    value = abs(value)
    degrees = int(value)
    minutes = (value - degrees) * 60
    return f"{degrees:0{degree_digits}d}{minutes:07.4f}", hemisphere


def parse_time(text):
    text = text.strip().replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(text).astimezone(datetime.timezone.utc)


def distance_and_bearing(a, b):
    lat1, lon1, lat2, lon2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    d = 2 * 6371008.8 * math.asin(
        math.sqrt(math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2)
    )
    y = math.sin(lon2 - lon1) * math.cos(lat2)
    x = math.cos(lat1) * math.sin(lat2) - math.sin(lat1) * math.cos(lat2) * math.cos(lon2 - lon1)
    return d, (math.degrees(math.atan2(y, x)) + 360) % 360


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: gpx-to-nmea.py TRACK.gpx > TRACK.nmea")
    text = open(sys.argv[1]).read()
    points = [(float(lat), float(lon), parse_time(t)) for lat, lon, t in POINT.findall(text)]
    if not points:
        raise SystemExit(f"{sys.argv[1]}: no <trkpt> with <time>")
    by_second = {}
    for lat, lon, t in points:
        by_second[int(t.timestamp())] = (lat, lon)
    first, last = min(by_second), max(by_second)
    out = [
        f"# Name: {sys.argv[1]} as NMEA (gpx-to-nmea.py, synthetic)",
        "# Chipset = none: GGA+RMC at 1 Hz derived from the GPX track",
        "# Notes: a second without a track point is a lost fix (GGA quality 0, RMC V)",
    ]
    previous = None
    for second in range(first, last + 1):
        t = datetime.datetime.fromtimestamp(second, datetime.timezone.utc)
        hhmmss = t.strftime("%H%M%S") + ".00"
        ddmmyy = t.strftime("%d%m%y")
        point = by_second.get(second)
        if point is None:
            out.append(sentence(f"GPGGA,{hhmmss},,,,,0,00,99.99,,,,,,"))
            out.append(sentence(f"GPRMC,{hhmmss},V,,,,,,,{ddmmyy},,,N"))
            previous = None
            continue
        nxt = by_second.get(second + 1)
        speed, course = 0.0, 0.0
        if nxt is not None:
            speed, course = distance_and_bearing(point, nxt)
        elif previous is not None:
            speed, course = distance_and_bearing(previous, point)
        lat, ns = degrees_minutes(point[0], 2, "N", "S")
        lon, ew = degrees_minutes(point[1], 3, "E", "W")
        out.append(sentence(f"GPGGA,{hhmmss},{lat},{ns},{lon},{ew},1,09,0.9,45.0,M,50.0,M,,"))
        knots = speed / 0.514444
        out.append(sentence(f"GPRMC,{hhmmss},A,{lat},{ns},{lon},{ew},{knots:.2f},{course:.1f},{ddmmyy},,,A"))
        previous = point
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
