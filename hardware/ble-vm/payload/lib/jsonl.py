#!/usr/bin/env python3
"""Reads the agent's JSON-line output inside the BLE VM (the image has python3).

    jsonl.py readings FILE        one line per HRM reading: bpm contact energy_kj rr
    jsonl.py events FILE          one line per link event: its name (connected, link_lost, ...)
    jsonl.py scan FILE ADDRESS    the scan result for ADDRESS as JSON, exit 1 if absent

Lines that are not JSON objects (log lines) are skipped.
"""
import json
import sys


def objects(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    yield obj
    except FileNotFoundError:
        return


def event_name(obj):
    for key in ("event", "type", "state", "kind"):
        if isinstance(obj.get(key), str):
            return obj[key]
    return None


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd == "readings":
        for o in objects(path):
            if "bpm" in o:
                print(o.get("bpm"), o.get("contact"), o.get("energy_kj"), o.get("rr", o.get("rr_ms")))
    elif cmd == "events":
        for o in objects(path):
            name = event_name(o)
            if name and "bpm" not in o:
                print(name)
    elif cmd == "scan":
        want = sys.argv[3].upper()
        for o in objects(path):
            if str(o.get("address", "")).upper() == want:
                print(json.dumps(o, sort_keys=True))
                return 0
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
