#!/usr/bin/env python3
"""schemathesis against a real trackme-server on loopback: the served /openapi.yaml is the
contract, and every operation in it is called with generated requests (valid and invalid) as a
device, a dispatcher and the admin. Checks: no 5xx (not_a_server_error), and every response whose
status the document describes has the body the document says (response_schema_conformance).
The server's rate limits are off (this checks the contract, not the limiter). Run by
`make api-check` (part of `make test`); reports in simulations/out/api-check/.

Usage: api_check.py --server .build/debug/trackme-server [--examples 10] [--seconds 60]
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Browser"))
from console_test import ADMIN, Device, Server, http  # noqa: E402

CHECKS = "not_a_server_error,response_schema_conformance"
# Streams stay open for as long as the client reads: schemathesis would wait out its timeout on
# each call. The feed is exercised by the behaviour suite and the browser tests.
STREAMS = ["/v1/alerts/stream", "/v1/people/{id}/stream"]


def credentials(server):
    """A device with an alert and a batch on record, a dispatcher, and the admin."""
    device = Device(server, "api-check-1", {"name": "Api Check", "age": 70})
    device.alert("api-check-alert-1", 0)
    device.batch(bpm=72)
    status, made = http(server.base, "POST", "/v1/dispatchers", {}, token=ADMIN)
    assert status == 201, (status, made)
    # The admin last: its operations (revoking tokens, erasing devices) may end the others'.
    return [("device", device.token), ("dispatcher", made["token"]), ("admin", ADMIN)]


def run(schemathesis, base, role, token, args, reports, workdir):
    command = [
        schemathesis, "run", base + "/openapi.yaml", "--url", base,
        "--header", f"Authorization: Bearer {token}",
        "--checks", CHECKS,
        "--max-examples", str(args.examples), "--max-time", str(args.seconds),
        # One worker: Hypothesis' source inspection is not thread-safe on CPython 3.11 (AST errors).
        "--seed", str(args.seed), "--request-timeout", "10", "--workers", "1",
        "--generation-database", "none", "--no-color",
        "--report", "junit", "--report-junit-path", os.path.join(reports, f"{role}.xml"),
    ]
    for path in STREAMS:
        command += ["--exclude-path", path]
    print(f"== schemathesis as the {role}", flush=True)
    # In the run's own directory: schemathesis keeps a cache folder where it runs.
    return subprocess.call(command, cwd=workdir)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--examples", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--seed", type=int, default=int(os.environ.get("API_CHECK_SEED", "34")))
    parser.add_argument("--out", default="simulations/out/api-check")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    schemathesis = os.path.join(os.path.dirname(sys.executable), "schemathesis")
    workdir = tempfile.mkdtemp(prefix="trackme-api-check-")
    server = Server(os.path.abspath(args.server), workdir, "--rate-per-address", "0", "--rate-per-token", "0", "--alerts-per-minute", "0")
    failed = []
    try:
        roles = credentials(server)
        for role, token in roles:
            if run(schemathesis, server.base, role, token, args, os.path.abspath(args.out), workdir) != 0:
                failed.append(role)
        alive = server.process.poll() is None
    finally:
        server.stop()
    print(f"api-check: {len(roles) - len(failed)} passed, {len(failed)} failed")
    if not alive:
        print(f"api-check failed: the server exited during the run (log in {workdir})")
        return 1
    if failed:
        print(f"api-check failed as: {', '.join(failed)} (server log in {workdir})")
        return 1
    return 0

if __name__ == "__main__":
    sys.exit(main())
