#!/bin/sh
# Measures the agent's resident memory and CPU over 60 s at 1 Hz heart rate (simulated strap,
# pace 1) and about 1 Hz GPS (gpsfake looping a recorded receiver log), syncing to a real
# trackme-server on loopback. Run from the repository root on the build machine:
#
#   hardware/measure-agent.sh AGENT_BINARY SERVER_BINARY [SECONDS]
#
# Prints /proc/PID/status's memory lines and the resident kB per mapping (the binary's code,
# read-only data and writable data, each shared library, anonymous memory), then `status`.
#
# Needs gpsd and gpsfake (apt-get install gpsd gpsd-clients python3-gps) and curl.
set -eu
AGENT=$1
SERVER=$2
SECONDS_TO_RUN=${3:-60}
ROOT=$(pwd)
WORK=$(mktemp -d /tmp/trackme-measure.XXXXXX)
trap 'kill $SERVER_PID $FAKE_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

SERVER_PORT=$(free_port)
GPSD_PORT=$(free_port)
echo measure-admin > "$WORK/admin-token"
"$SERVER" serve --plain-http --host 127.0.0.1 --port "$SERVER_PORT" --db "sqlite:$WORK/server.sqlite" --admin-token-file "$WORK/admin-token" \
    2> "$WORK/server.log" &
SERVER_PID=$!
tries=0
until curl -sf "http://127.0.0.1:$SERVER_PORT/health" > /dev/null; do
    tries=$((tries + 1)); [ $tries -lt 150 ] || { cat "$WORK/server.log"; exit 1; }; sleep 0.2
done
curl -sf -H "Authorization: Bearer measure-admin" -H "Content-Type: application/json" \
    -d '{"device_id":"pi-measure","person":{"name":"Ada","age":67}}' "http://127.0.0.1:$SERVER_PORT/v1/devices" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' > "$WORK/device-token"

# telit-he910.log has 7 sentences per fix: one every 0.143 s is one fix a second, looping.
gpsfake -q -P "$GPSD_PORT" -c 0.143 "$ROOT/simulations/traces/gpsd/telit-he910.log" > "$WORK/gpsfake.log" 2>&1 &
FAKE_PID=$!

cat > "$WORK/agent.yaml" <<YAML
person: {name: Ada, age: 67}
server: {url: "http://127.0.0.1:$SERVER_PORT", device_id: pi-measure, token_file: device-token}
strap: {transport: socketpair, trace: $ROOT/simulations/traces/hr/mitdb100_normal_sinus.csv, pace: 1}
gpsd: {host: 127.0.0.1, port: $GPSD_PORT}
store: {path: data/agent.sqlite}
status: {socket: agent.sock}
metrics: {enabled: false}
YAML
"$AGENT" run --config "$WORK/agent.yaml" 2> "$WORK/agent.log" &
AGENT_PID=$!
# Start-up (store open, strap connect) and the log's 37 s without a fix are not the steady state.
sleep 40
ticks=$(getconf CLK_TCK)
cpu0=$(awk '{print $14+$15}' /proc/$AGENT_PID/stat)
sleep "$SECONDS_TO_RUN"
cpu1=$(awk '{print $14+$15}' /proc/$AGENT_PID/stat)
grep -E 'VmRSS|VmHWM|RssAnon|RssFile|Threads' /proc/$AGENT_PID/status
# Where the resident memory is: file-backed (the binary's code and read-only data, ICU's among
# them; shared libraries) against anonymous (heap, malloc arenas, thread stacks), per mapping.
echo "resident by mapping (kB, largest first):"
awk '/^[0-9a-f]+-[0-9a-f]+ / { name = ($6 == "" ? "[anon]" : $6); if ($2 ~ /x/) name = name " (code)"; else if ($2 ~ /w/) name = name " (rw)"; else name = name " (ro)" }
     /^Rss:/ { rss[name] += $2 }
     END { for (n in rss) if (rss[n] >= 256) printf "  %8d  %s\n", rss[n], n }' /proc/$AGENT_PID/smaps | sort -rn
"$AGENT" status --socket "$WORK/agent.sock"
# MEASURE_INSPECT=PROGRAM: run PROGRAM AGENT_PID AGENT_BINARY before the agent is stopped.
[ -z "${MEASURE_INSPECT:-}" ] || "$MEASURE_INSPECT" "$AGENT_PID" "$AGENT"
kill -TERM $AGENT_PID
wait $AGENT_PID && echo "agent exit 0"
echo "cpu over ${SECONDS_TO_RUN}s: $(( (cpu1 - cpu0) * 1000 / ticks )) ms"
