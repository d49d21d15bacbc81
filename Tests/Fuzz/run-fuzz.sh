#!/usr/bin/env bash
# Builds the libFuzzer targets for every parser that takes bytes from outside and runs each for
# SECONDS (default 30):
#   hrm-decoder, att-pdu   the BLE parsers (Heart Rate Measurement; ATT PDUs, advertising reports)
#   wire-codec             the server's batch, alert, conflict and heartbeat JSON (WireCodec)
#   reading-body           the store's reading body codec (ReadingBodyCodec)
#   gzip-inflater          the server's gzip inflater (zlib, with the inflated-size limit)
# Exits non-zero if any target crashes; crash inputs stay in .build/fuzz/<target>/.
# The parsers are compiled straight from Sources/ into one module per target (imports of our own
# modules stripped), so the fuzzers test exactly the shipped code without SwiftPM knowing about them.
# With FUZZ_CORPUS_KEEP=1 (make fuzz-long) new interesting inputs are added to the corpus kept in
# the repository (Tests/Fuzz/corpus/<target>/); otherwise that corpus is only read.
# FUZZ_TARGETS="a b" runs only those targets.
set -euo pipefail
seconds="${1:-30}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="$root/.build/fuzz"
kept="$root/Tests/Fuzz/corpus"
mkdir -p "$out"

ble=(ByteReader HeartRateMeasurement BluetoothUUID BluetoothAddress ATTPDU AdvertisingReport)

strip_imports() { # file -> stdout, without imports of our own modules
    sed -E '/^(public |package )?import (TrackMeCore|CBlueZ|CZlib|Glibc|Logging|GRDB)$/d' "$1"
}

sources() { # name: copies the target's sources into $out/name/src
    local name="$1" src="$out/$1/src"
    rm -rf "$src" && mkdir -p "$src"
    case "$name" in
    hrm-decoder | att-pdu)
        cp "$root/Sources/TrackMeCore/HeartRateReading.swift" "$src/"
        for f in "${ble[@]}"; do strip_imports "$root/Sources/BlueZHeartRate/$f.swift" > "$src/$f.swift"; done ;;
    wire-codec)
        cp "$root"/Sources/TrackMeCore/*.swift "$src/" ;;
    reading-body)
        cp "$root"/Sources/TrackMeCore/*.swift "$src/"
        strip_imports "$root/Sources/EdgeStore/ReadingBodyCodec.swift" > "$src/ReadingBodyCodec.swift" ;;
    gzip-inflater)
        strip_imports "$root/Sources/TrackMeServer/GzipInflater.swift" | sed '1i import CZlib' > "$src/GzipInflater.swift" ;;
    esac
}

build() { # name entry-file
    local name="$1" entry="$2" src="$out/$1/src"
    sources "$name"
    cp "$root/Tests/Fuzz/$entry" "$src/"
    local extra=()
    [ "$name" = gzip-inflater ] && extra=(-I "$root/Sources/CZlib" -lz)
    swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name "Fuzz${name//-/_}" "${extra[@]}" "$src"/*.swift \
        -o "$out/$name/$name" 2> "$out/$name/build.log" || { cat "$out/$name/build.log"; exit 1; }
}

seed() { # name: a corpus from real inputs (captured HRM payloads, WIRE.md's examples, a gzip body)
    local name="$1" corpus="$out/$1/corpus"
    rm -rf "$corpus" && mkdir -p "$corpus"
    case "$name" in
    hrm-decoder | att-pdu)
        grep -hv '^#' "$root"/simulations/traces/hrm-bytes/*.hex | while read -r line; do
            [ -n "$line" ] || continue
            local escaped="" byte
            for byte in $line; do escaped+="\\x$byte"; done
            printf "$escaped" > "$corpus/$(printf '%s' "$line" | tr -d ' ')"
        done ;;
    wire-codec)
        awk '/^```json/{n++; f=1; next} /^```/{f=0} f{print > ("'"$corpus"'/wire-" n ".json")}' "$root/Sources/TrackMeCore/WIRE.md" ;;
    reading-body)
        printf '\x00\x90\x01\x02\xcb\x06\xbd\x06' > "$corpus/hr"
        printf '\x8d\x83\xa8\xfa\xbc\xd2\x02\xd7\xb0\xf2\xc6\x0b' > "$corpus/fix" ;;
    gzip-inflater)
        awk '/^```json/{f=1; next} /^```/{f=0} f' "$root/Sources/TrackMeCore/WIRE.md" | gzip -c > "$corpus/wire.gz"
        printf 'x' | gzip -c > "$corpus/x.gz" ;;
    esac
}

targets="${FUZZ_TARGETS:-hrm-decoder att-pdu wire-codec reading-body gzip-inflater}"
status=0
for name in $targets; do
    case "$name" in
    hrm-decoder) entry=HRMDecoderFuzz.swift; maxlen=64 ;;
    att-pdu) entry=ATTPDUFuzz.swift; maxlen=64 ;;
    wire-codec) entry=WireCodecFuzz.swift; maxlen=4096 ;;
    reading-body) entry=ReadingBodyFuzz.swift; maxlen=256 ;;
    gzip-inflater) entry=GzipInflaterFuzz.swift; maxlen=4096 ;;
    *) echo "fuzz: unknown target $name"; exit 2 ;;
    esac
    mkdir -p "$out/$name"
    build "$name" "$entry"
    seed "$name"
    corpora=("$out/$name/corpus")
    if [ -d "$kept/$name" ]; then corpora+=("$kept/$name"); fi
    if [ "${FUZZ_CORPUS_KEEP:-0}" = 1 ]; then mkdir -p "$kept/$name"; corpora=("$kept/$name" "$out/$name/corpus"); fi
    echo "fuzz: $name for ${seconds}s"
    if (cd "$out/$name" && ./"$name" -max_total_time="$seconds" -max_len="$maxlen" -print_final_stats=1 "${corpora[@]}" > run.log 2>&1); then
        grep -E '^stat::number_of_executed_units' "$out/$name/run.log" | sed "s/^/fuzz: $name /" || true
    else
        echo "fuzz: $name FAILED; see $out/$name/run.log"
        tail -20 "$out/$name/run.log"
        status=1
    fi
done
exit $status
