#!/usr/bin/env bash
# Builds the libFuzzer targets for the pure BLE parsers (HRM decoder; ATT PDUs and HCI advertising
# reports) with swiftc -sanitize=fuzzer,address and runs each for SECONDS (default 30).
# Exits non-zero if any target crashes; crash inputs stay in .build/fuzz/<target>/.
# The parsers are compiled straight from Sources/ into one module per target (imports of our own
# modules stripped), so the fuzzers test exactly the shipped code without SwiftPM knowing about them.
set -euo pipefail
seconds="${1:-30}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/.build/fuzz"
mkdir -p "$out"

core=("$root/Sources/TrackMeCore/HeartRateReading.swift")
ble=(ByteReader HeartRateMeasurement BluetoothUUID BluetoothAddress ATTPDU AdvertisingReport)

build() { # name entry-file
    local name="$1" entry="$2" src="$out/$1/src"
    rm -rf "$src" && mkdir -p "$src"
    cp "${core[@]}" "$src/"
    for f in "${ble[@]}"; do
        sed -E '/^(public )?import (TrackMeCore|CBlueZ|Glibc|Logging)$/d' "$root/Sources/BlueZHeartRate/$f.swift" > "$src/$f.swift"
    done
    cp "$root/Tests/Fuzz/$entry" "$src/"
    swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name "Fuzz${name//-/_}" "$src"/*.swift -o "$out/$name/$name" \
        2> "$out/$name/build.log" || { cat "$out/$name/build.log"; exit 1; }
}

seed() { # name: corpus from the real captured payloads
    local corpus="$out/$1/corpus"
    mkdir -p "$corpus"
    grep -hv '^#' "$root"/simulations/traces/hrm-bytes/*.hex | while read -r line; do
        [ -n "$line" ] || continue
        local escaped="" byte
        for byte in $line; do escaped+="\\x$byte"; done
        printf "$escaped" > "$corpus/$(printf '%s' "$line" | tr -d ' ')"
    done
}

status=0
for target in hrm-decoder:HRMDecoderFuzz.swift att-pdu:ATTPDUFuzz.swift; do
    name="${target%%:*}"
    build "$name" "${target#*:}"
    seed "$name"
    echo "fuzz: $name for ${seconds}s"
    if (cd "$out/$name" && ./"$name" -max_total_time="$seconds" -max_len=64 -print_final_stats=1 corpus > run.log 2>&1); then
        grep -E '^stat::number_of_executed_units' "$out/$name/run.log" || true
    else
        echo "fuzz: $name FAILED; see $out/$name/run.log"
        tail -20 "$out/$name/run.log"
        status=1
    fi
done
exit $status
