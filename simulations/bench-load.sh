#!/usr/bin/env bash
# `trackme-sim bench load` against real servers, stepping the number of devices to find the
# largest one whose batch p99 stays within 100 ms (issue 22). Starts what each setup needs, on
# this machine, and stops it afterwards:
#   sqlite     one trackme-server on a SQLite file
#   postgres   one trackme-server on a PostgreSQL started here (fsync on)
#   three      three trackme-server processes on that PostgreSQL behind HAProxy
#              (hardware/haproxy/trackme.cfg, TLS terminated there); INSTANCES=1 or 2 for
#              fewer behind the same balancer
#
#   simulations/bench-load.sh sqlite "5000 10000 20000"         # devices to try, in order
#   SECONDS_EACH=60 BIN=.build-release/release simulations/bench-load.sh three "2000 5000"
#   PG_EXTRA="-c commit_delay=1000" simulations/bench-load.sh postgres   # PostgreSQL settings to try
#   INSTANCE_CORES=0.25 simulations/bench-load.sh three "3000 6000"  # each server held to a quarter core
#   SEALED=1 simulations/bench-load.sh sqlite "2000 5000"  # with a master key: per-person keys sealing
#                                                          # contacts, notes and reading bodies
#
# INSTANCE_CORES caps each trackme-server's CPU (a cgroup v1 `cpu` quota over a 10 ms period, so a
# throttled server waits at most a few ms): on a machine with fewer cores than the setup has
# processes, one instance and three then differ only in the servers' capacity, not in who
# gets the cores, which is how the three-instance scaling is measured here.
#
# Before the steps, a baseline in the same run (BASELINE=0 skips it): a fresh server of the same
# setup takes BASELINE_DEVICES' batches closed-loop (`bench load --saturate`) for SECONDS_EACH,
# which is its whole intake rate on this machine with nothing else. The knee is then also given as
# a ratio: the batches per second offered at the largest N within the goal over that rate. A
# device count depends on the machine; the ratio says how much of the intake rate the server can
# offer at p99 <= the goal, and carries between machines.
#
# Needs a release build with PostgreSQL (swift build -c release --traits PostgreSQL
# --scratch-path .build-release), Debian's postgresql and haproxy, openssl; root (PostgreSQL
# runs as user postgres). Prints one JSON line per step and the largest N within the goal.
set -euo pipefail
SETUP=${1:?sqlite, postgres or three}
STEPS=${2:-"1000 2000 5000 10000 20000"}
BIN=${BIN:-.build-release/release}
SECONDS_EACH=${SECONDS_EACH:-60}
GOAL_MS=${GOAL_MS:-100}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/trackme-bench-load.XXXXXX)
chmod 755 "$WORK"
ADMIN=bench-load-admin
PIDS=()
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
CGROUPS=()
cleanup() {
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for group in "${CGROUPS[@]}"; do rmdir "$group" 2>/dev/null || true; done
	[ -d "$WORK/pg/data" ] && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$WORK/pg/data" -m fast stop >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_postgres() {
	mkdir -p "$WORK/pg" && chown postgres:postgres "$WORK/pg"
	runuser -u postgres -- "$PG_BIN/initdb" -D "$WORK/pg/data" -A trust -U postgres >/dev/null
	PG_PORT=$(free_port)
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/log" -w \
		-o "-p $PG_PORT -k $WORK/pg -c listen_addresses=127.0.0.1 -c max_connections=500 ${PG_EXTRA:-}" start >/dev/null
}

# start_server DB LOG: starts one in the background; SERVER_PORT once it listens
start_server() {
	local db=$1 log=$2
	local sealing=()
	if [ -n "${SEALED:-}" ]; then
		sealing=(--master-key-file "$WORK/master.key")
		[ -n "${KEY_STORE:-}" ] && sealing+=(--person-key-store "$KEY_STORE")
	fi
	TRACKME_ADMIN_TOKEN=$ADMIN LOG_LEVEL=info "$BIN/trackme-server" serve --plain-http --port 0 --db "$db" \
		--rate-per-address 0 --rate-per-token 0 --alerts-per-minute 0 --max-connections-per-address 100000 \
		--max-connections 100000 "${sealing[@]}" >"$log" 2>&1 &
	PIDS+=($!)
	if [ -n "${INSTANCE_CORES:-}" ]; then
		local group=/sys/fs/cgroup/cpu/trackme-bench-$!
		mkdir "$group"
		echo 10000 >"$group/cpu.cfs_period_us"
		local quota
		quota=$(awk "BEGIN { printf \"%d\", $INSTANCE_CORES * 10000 }")
		echo "$quota" >"$group/cpu.cfs_quota_us"
		echo $! >"$group/cgroup.procs"
		CGROUPS+=("$group")
	fi
	for _ in $(seq 300); do
		port=$(grep -o 'http://127.0.0.1:[0-9]*' "$log" | head -1 | cut -d: -f3 || true)
		[ -n "$port" ] && { SERVER_PORT=$port; return; }
		sleep 0.1
	done
	echo "trackme-server did not start: $(cat "$log")" >&2
	exit 1
}

# run_step NAME DEVICES [--saturate]: NAME names the step's database and log
run_step() {
	local n=$1 devices=$2
	shift 2
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	PIDS=()
	local args=()
	if [ -n "${SEALED:-}" ] && [ "$SETUP" != sqlite ]; then
		runuser -u postgres -- "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "keys$n"
		KEY_STORE="postgres://postgres@127.0.0.1:$PG_PORT/keys$n"
	fi
	case $SETUP in
	sqlite) start_server "sqlite:$WORK/server-$n.sqlite" "$WORK/server-$n.log"; PORT=$SERVER_PORT ;;
	postgres)
		runuser -u postgres -- "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "load$n"
		start_server "postgres://postgres@127.0.0.1:$PG_PORT/load$n" "$WORK/server-$n.log"; PORT=$SERVER_PORT ;;
	three)
		runuser -u postgres -- "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "load$n"
		local ports=()
		for i in $(seq "${INSTANCES:-3}"); do
			start_server "postgres://postgres@127.0.0.1:$PG_PORT/load$n" "$WORK/server-$n-$i.log"
			ports+=("$SERVER_PORT")
		done
		# INSTANCES=1: the same path with one instance behind the balancer (its three entries).
		while [ "${#ports[@]}" -lt 3 ]; do ports+=("${ports[0]}"); done
		PORT=$(free_port)
		TRACKME_BIND=127.0.0.1:$PORT TRACKME_TLS_PEM=$WORK/proxy.pem TRACKME_SERVER1=127.0.0.1:${ports[0]} \
			TRACKME_SERVER2=127.0.0.1:${ports[1]} TRACKME_SERVER3=127.0.0.1:${ports[2]} TRACKME_CLIENT_RATE=100000000 \
			TRACKME_CLIENT_CONNS=100000 TRACKME_MAXCONN=$(( $(ulimit -n) / 2 - 100 )) haproxy -db -f "$ROOT/hardware/haproxy/trackme.cfg" >"$WORK/haproxy.log" 2>&1 &
		PIDS+=($!)
		for _ in $(seq 100); do curl -sf --cacert "$WORK/proxy-cert.pem" "https://localhost:$PORT/health" >/dev/null && break; sleep 0.1; done
		args=(--ca-file "$WORK/proxy-cert.pem") ;;
	*) echo "unknown setup $SETUP" >&2; exit 2 ;;
	esac
	"$BIN/trackme-sim" bench load --port "$PORT" --admin-token "$ADMIN" --devices "$devices" --seconds "$SECONDS_EACH" --json "${args[@]}" "$@"
	# The servers' own CPU over the step (enrolment included), from /proc: a cost per batch that
	# other work on the machine moves much less than it moves latency.
	local ticks=0
	for pid in "${PIDS[@]}"; do
		[ -r "/proc/$pid/stat" ] && ticks=$((ticks + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
	done
	echo "server_cpu_seconds $(awk "BEGIN { printf \"%.2f\", $ticks / $(getconf CLK_TCK) }")" >&2
}

case $SETUP in
postgres | three) start_postgres ;;
esac
if [ "$SETUP" = three ]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
		-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout "$WORK/proxy-key.pem" -out "$WORK/proxy-cert.pem" 2>/dev/null
	cat "$WORK/proxy-cert.pem" "$WORK/proxy-key.pem" >"$WORK/proxy.pem"
fi
if [ -n "${SEALED:-}" ]; then
	openssl rand -hex 32 >"$WORK/master.key"
	chmod 0400 "$WORK/master.key"
fi
capacity=
if [ "${BASELINE:-1}" != 0 ]; then
	# Its own database (the name says so), so the steps start from an empty one as before.
	base=${BASELINE_DEVICES:-2000}
	run_step "base$base" "$base" --saturate >"$WORK/step-base.json" 2>"$WORK/step-base.err" || { cat "$WORK/step-base.err" >&2; exit 1; }
	line=$(tail -1 "$WORK/step-base.json")
	echo "$SETUP baseline $line"
	cat "$WORK/step-base.err" >&2
	capacity=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["acknowledged_batches_per_second"])' "$line")
fi
best=0
best_rate=0
for n in $STEPS; do
	run_step "$n" "$n" >"$WORK/step-$n.json"
	line=$(tail -1 "$WORK/step-$n.json")
	echo "$SETUP $line"
	p99=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["batch_p99_ms"])' "$line")
	failed=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["batches_failed"])' "$line")
	if python3 -c "import sys; sys.exit(0 if $p99 <= $GOAL_MS and $failed == 0 else 1)"; then
		best=$n
		best_rate=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["offered_batches_per_second"])' "$line")
	else break; fi
done
echo "$SETUP: largest N with batch p99 <= $GOAL_MS ms and no failures: $best"
if [ -n "$capacity" ]; then
	python3 -c 'import sys; b, c = float(sys.argv[1]), float(sys.argv[2]); print("%s: knee at %.1f batches/s = %.2f of the intake rate measured in this run (%.1f batches/s closed-loop)" % (sys.argv[3], b, b / c if c else 0, c))' "$best_rate" "$capacity" "$SETUP"
fi
