#!/usr/bin/env python3
"""Names the tests a Swift Testing log shows started and never finished: what a test target
that ran out of time (`make unit-tests`' `timeout 900`) was still waiting on. Parameterised
tests count once, by their name. Usage: pending-tests.py LOG"""

import re
import sys

STARTED = re.compile(r'^◇ Test (?!case )(.*) started\.$')
ENDED = re.compile(r'^[✔✘] Test (?!case )(.*?) (?:with \d+ test cases? )?(?:passed|failed|skipped)')


def pending(lines):
    started, ended = [], set()
    for line in lines:
        line = line.rstrip('\n')
        match = STARTED.match(line)
        # "◇ Test run started." opens the whole run, not a test.
        if match and match.group(1) != 'run':
            started.append(match.group(1))
            continue
        match = ENDED.match(line)
        if match:
            ended.add(match.group(1))
    return [name for name in dict.fromkeys(started) if name not in ended]


if __name__ == '__main__':
    with open(sys.argv[1], encoding='utf-8', errors='replace') as log:
        names = pending(log)
    for name in names:
        print(f'still running: {name[:240]}')
    if not names:
        print('still running: no test (the hang is outside a test: start-up, a suite fixture or the exit)')
