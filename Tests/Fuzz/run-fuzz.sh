#!/usr/bin/env bash
# Builds the libFuzzer targets for every parser that takes bytes from outside and runs each for
# SECONDS (default 30):
#   hrm-decoder, att-pdu   the BLE parsers (Heart Rate Measurement; ATT PDUs, advertising reports)
#   wire-codec             the server's batch, alert, conflict and heartbeat JSON (WireCodec)
#   reading-body           the store's reading body codec (ReadingBodyCodec)
#   gzip-inflater          the server's gzip inflater (zlib, with the inflated-size limit)
#   gpsd-report            a line from gpsd through libgps's parser, the shim and the reader's
#                          state machine (GPSDConnection.report(line:), GPSDStateMachine)
#   config-yaml            the agent's YAML configuration (ConfigurationLoader, Yams, libyaml)
#   control-message        the control socket's request and response lines (ControlCodec)
# Exits non-zero if any target crashes or spends more than 10 s on one input (a hang); such
# inputs stay in .build/fuzz/<target>/.
# The parsers are compiled straight from Sources/ into one module per target (imports of our own
# modules stripped), so the fuzzers test exactly the shipped code without SwiftPM knowing about them.
# C underneath is compiled with the fuzzer's coverage too (the gpsd shim; libyaml from Yams'
# checkout, which `swift build` fetched), and Yams is built once into its own module; libgps is the
# system's, uninstrumented.
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
    sed -E '/^(public |package )?import (TrackMeCore|CBlueZ|CZlib|Glibc|Logging|GRDB|EdgeDispatch)$/d' "$1"
}

core() { # dir: TrackMeCore's sources (no system calls, no dependencies)
    cp "$root"/Sources/TrackMeCore/*.swift "$1/"
}

sources() { # name: copies the target's sources into $out/name/src
    local name="$1" src="$out/$1/src"
    rm -rf "$src" && mkdir -p "$src"
    case "$name" in
    hrm-decoder | att-pdu)
        cp "$root/Sources/TrackMeCore/HeartRateReading.swift" "$root/Sources/TrackMeCore/Hex.swift" "$src/"
        for f in "${ble[@]}"; do strip_imports "$root/Sources/BlueZHeartRate/$f.swift" > "$src/$f.swift"; done ;;
    wire-codec)
        core "$src" ;;
    reading-body)
        core "$src"
        strip_imports "$root/Sources/EdgeStore/ReadingBodyCodec.swift" > "$src/ReadingBodyCodec.swift" ;;
    gzip-inflater)
        strip_imports "$root/Sources/GzipCodec/Gzip.swift" | sed '1i import CZlib' > "$src/Gzip.swift" ;;
    gpsd-report)
        core "$src"
        for f in GPSDReport GPSDConnection GPSDStateMachine GPSDEvent GPSDError; do
            strip_imports "$root/Sources/GPSDPosition/$f.swift" > "$src/$f.swift"
        done ;;
    config-yaml)
        core "$src"
        for f in "$root"/Sources/TrackMeAgent/Configuration/*.swift "$root"/Sources/TrackMeAgent/Feedback/FeedbackMachine.swift \
            "$root"/Sources/TrackMeAgent/Feedback/FeedbackOutputs.swift "$root"/Sources/EdgeDispatch/LocalFallback.swift; do
            strip_imports "$f" > "$src/$(basename "$f")"
        done ;;
    control-message)
        core "$src"
        for f in Control/ControlMessage Control/AgentStatus Control/AgentControl Feedback/FeedbackMachine; do
            strip_imports "$root/Sources/TrackMeAgent/$f.swift" > "$src/$(basename "$f").swift"
        done ;;
    esac
}

cflags=(-fsanitize=fuzzer-no-link,address -O1 -g)

native() { # name: C underneath the target, compiled with coverage; sets extra=(...)
    local name="$1" dir="$out/$1"
    case "$name" in
    gzip-inflater) extra=(-I "$root/Sources/CZlib" -lz) ;;
    gpsd-report)
        mkdir -p "$dir/shim"
        cp "$root/Sources/CGPSShim/include/tm_gps_shim.h" "$dir/shim/"
        printf 'module CGPSShim {\n    header "tm_gps_shim.h"\n    export *\n}\n' > "$dir/shim/module.modulemap"
        clang "${cflags[@]}" -I "$dir/shim" -c "$root/Sources/CGPSShim/tm_gps_shim.c" -o "$dir/shim/tm_gps_shim.o"
        extra=(-I "$dir/shim" "$dir/shim/tm_gps_shim.o" -lgps) ;;
    config-yaml)
        # Yams (and libyaml) from the checkout SwiftPM made, built once into a module of its own.
        local yams="$root/.build/checkouts/Yams/Sources" lib="$out/yams"
        [ -d "$yams" ] || { echo "fuzz: $yams missing: run swift build first"; exit 1; }
        if [ ! -f "$lib/libYams.a" ]; then
            rm -rf "$lib" && mkdir -p "$lib/cyaml"
            for c in "$yams"/CYaml/src/*.c; do
                clang "${cflags[@]}" -DYAML_DECLARE_STATIC -I "$yams/CYaml/include" -c "$c" -o "$lib/cyaml/$(basename "$c" .c).o"
            done
            (cd "$lib" && swiftc -sanitize=address -parse-as-library -O -module-name Yams -emit-module -emit-library -static \
                -D SWIFT_PACKAGE -Xcc -DYAML_DECLARE_STATIC -I "$yams/CYaml/include" "$yams"/Yams/*.swift -o libYams.a) > "$lib/build.log" 2>&1 || { cat "$lib/build.log"; exit 1; }
        fi
        extra=(-I "$lib" -I "$yams/CYaml/include" -L "$lib" -lYams "$lib"/cyaml/*.o) ;;
    *) extra=() ;;
    esac
}

build() { # name entry-file
    local name="$1" entry="$2" src="$out/$1/src"
    sources "$name"
    cp "$root/Tests/Fuzz/$entry" "$src/"
    local extra=()
    native "$name"
    swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name "Fuzz${name//-/_}" -package-name fuzz "${extra[@]}" "$src"/*.swift \
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
    gpsd-report) # gpsd's own JSON from the recorded receivers (simulations/traces/gpsd/NOTICE.txt)
        grep -h '^{' "$root"/simulations/traces/gpsd/*.chk | sort -u | awk 'NR <= 200' | split -l 1 - "$corpus/chk-" ;;
    config-yaml)
        cp "$root/hardware/trackme-agent.example.yaml" "$corpus/example.yaml" ;;
    control-message) ;; # the kept corpus has the requests and a status answer
    esac
}

targets="${FUZZ_TARGETS:-hrm-decoder att-pdu wire-codec reading-body gzip-inflater gpsd-report config-yaml control-message}"
status=0
for name in $targets; do
    case "$name" in
    hrm-decoder) entry=HRMDecoderFuzz.swift; maxlen=64 ;;
    att-pdu) entry=ATTPDUFuzz.swift; maxlen=64 ;;
    wire-codec) entry=WireCodecFuzz.swift; maxlen=4096 ;;
    reading-body) entry=ReadingBodyFuzz.swift; maxlen=256 ;;
    gzip-inflater) entry=GzipInflaterFuzz.swift; maxlen=4096 ;;
    gpsd-report) entry=GPSDReportFuzz.swift; maxlen=4096 ;;
    config-yaml) entry=ConfigurationFuzz.swift; maxlen=4096 ;;
    control-message) entry=ControlMessageFuzz.swift; maxlen=4096 ;;
    *) echo "fuzz: unknown target $name"; exit 2 ;;
    esac
    mkdir -p "$out/$name"
    build "$name" "$entry"
    seed "$name"
    corpora=("$out/$name/corpus")
    if [ -d "$kept/$name" ]; then corpora+=("$kept/$name"); fi
    if [ "${FUZZ_CORPUS_KEEP:-0}" = 1 ]; then mkdir -p "$kept/$name"; corpora=("$kept/$name" "$out/$name/corpus"); fi
    echo "fuzz: $name for ${seconds}s"
    if (cd "$out/$name" && ./"$name" -max_total_time="$seconds" -max_len="$maxlen" -timeout=10 -print_final_stats=1 "${corpora[@]}" > run.log 2>&1); then
        grep -E '^stat::number_of_executed_units' "$out/$name/run.log" | sed "s/^/fuzz: $name /" || true
    else
        echo "fuzz: $name FAILED; see $out/$name/run.log"
        tail -20 "$out/$name/run.log"
        status=1
    fi
done
exit $status
