import Foundation
import Testing
import TrackMeCore

/// The server's fast path for batches (issue 22) must give exactly what `WireCodec` gives, or
/// give up. The `wire-codec` fuzz target checks the same properties on arbitrary bytes.
@Suite struct WireFastPathTests {
    /// A deterministic generator, so a failure names the seed that shows it.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 11
        }
        mutating func below(_ bound: UInt64) -> UInt64 { next() % bound }
        mutating func bool() -> Bool { next() & 1 == 1 }
    }

    static func reading(_ g: inout Generator, sequence: Int64) -> WireReading {
        let boots = ["3f1c2d9e-8a51-4c1e-9d7b-2a4e5f6a7b8c", "boot with spaces", "slash/in/boot", "quote\"q", "é-unicode", ""]
        let timestamp = ReadingTimestamp(
            monotonicNanoseconds: g.below(4) == 0 ? UInt64.max - g.below(10) : g.next(),
            bootID: boots[Int(g.below(UInt64(boots.count)))],
            wallClockMilliseconds: g.bool() ? Int64(g.below(2_000_000_000_000)) - 1_000 : nil,
            wallClockTrusted: g.bool(),
            wallClockCorrected: g.below(4) == 0
        )
        if g.below(5) == 0 {
            // Any finite double: the canonical text must write it as JSONEncoder does.
            func anyDouble() -> Double? {
                switch g.below(4) {
                case 0: return nil
                case 1: return Double(Int64(g.below(2_000_000)) - 1_000_000)
                case 2: return Double(Int64(g.below(180_000_000)) - 90_000_000) / 1e6
                default:
                    let any = Double(bitPattern: g.next() << 32 ^ g.next())
                    return any.isFinite ? any : 1e-7
                }
            }
            let fix = PositionFix(
                time: g.bool() ? "2034-11-27T20:26:40.000Z" : nil,
                mode: FixMode.allCases[Int(g.below(3))],
                latitude: anyDouble(),
                longitude: g.bool() ? -121.3146 : nil,
                altitudeHAE: anyDouble(),
                altitudeMSL: anyDouble(),
                speed: g.bool() ? 0.03 : anyDouble(),
                track: g.bool() ? 359.99 : nil,
                horizontalError: anyDouble()
            )
            return WireReading(sequence: sequence, timestamp: timestamp, payload: .position(fix))
        }
        let hr = HeartRateReading(
            bpm: Int(g.below(300)),
            contact: SensorContact.allCases[Int(g.below(3))],
            energyExpendedKilojoules: g.bool() ? Int(g.below(70_000)) : nil,
            rrIntervals: (0..<g.below(5)).map { _ in UInt16(g.below(65_536)) }
        )
        return WireReading(sequence: sequence, timestamp: timestamp, payload: .heartRate(hr))
    }

    static func batch(_ g: inout Generator, number: Int64) -> SyncBatch {
        var heartbeat: DeviceHeartbeat?
        if g.bool() {
            var beat = DeviceHeartbeat(
                strap: "connected",
                gpsd: "fix",
                storeDepth: Int(g.below(10_000)),
                storeBytes: Int64(g.below(1 << 40)),
                batteryPercent: g.bool() ? Int(g.below(101)) : nil,
                batteryLow: g.bool() ? g.bool() : nil,
                monitoringPaused: g.bool() ? g.bool() : nil,
                bodySensorLocation: g.bool() ? "chest" : nil
            )
            beat.storeState = g.bool() ? "disk" : nil
            beat.storeProblem = g.below(4) == 0 ? (g.bool() ? "disk_full: 0 bytes left" : "read_only: /var/lib/x") : nil
            beat.quarantinedReadings = g.bool() ? Int64(g.below(100)) : nil
            beat.deviceBatteryPercent = g.bool() ? Int(g.below(101)) : nil
            beat.devicePower = g.bool() ? [.battery, .charging, .full, .mains][Int(g.below(4))] : nil
            beat.devicePowerLevel = g.bool() ? (g.bool() ? .low : .critical) : nil
            // The profile and a taxi's state are plain words, on the fast path.
            if g.bool() { beat.profile = DeviceProfile.allCases[Int(g.below(3))] }
            if g.below(4) == 0 { beat.taxiState = TaxiAvailability.allCases[Int(g.below(3))] }
            // A runner's run is on the fast path, every optional part of it drawn.
            if g.below(4) == 0 {
                beat.run = RunParticipation(
                    code: "R-\(g.below(99))",
                    showToSpectators: g.bool(),
                    shareHealth: g.bool(),
                    checkedInMilliseconds: g.bool() ? Int64(g.below(1 << 41)) : nil
                )
            }
            // The nested fields: a canonical text without them would lose them.
            if g.below(6) == 0 {
                beat.careVersion = Int64(g.below(9))
                beat.careConflicts = ["max_bpm"]
            }
            heartbeat = beat
        }
        let count = Int(g.below(12))
        return SyncBatch(
            deviceID: "pi-\(g.below(1000))",
            batchSequence: number,
            storeEpoch: g.bool() ? "epoch-\(g.below(99))" : nil,
            droppedByBudget: Int64(g.below(3)),
            heartbeat: heartbeat,
            readings: (0..<count).map { reading(&g, sequence: number * 100 + Int64($0)) }
        )
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func decodesWhatTheGeneralDecoderDecodes(seed: UInt64) throws {
        var g = Generator(state: seed)
        for number in 1...200 {
            let batch = Self.batch(&g, number: Int64(number))
            let bytes = [UInt8](try WireCodec.encode(batch))
            let fast = WireFastPath.syncBatch(bytes)
            // Plain strings take the fast path; anything escaped is left to WireCodec.
            let plain =
                batch.readings.allSatisfy { !$0.timestamp.bootID.contains(where: { "\"/é".contains($0) }) }
                && (batch.heartbeat?.storeProblem.map { !$0.contains("/") } ?? true)
                // The nested heartbeat fields are left to WireCodec too.
                && (batch.heartbeat.map { $0.careConflicts == nil } ?? true)
            if plain { #expect(fast == batch, "seed \(seed) batch \(number)") } else { #expect(fast == nil || fast == batch) }
            // Pretty-printed (the WIRE.md layout) decodes the same.
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let pretty = WireFastPath.syncBatch([UInt8](try encoder.encode(batch)))
            #expect(pretty == nil || pretty == batch)
            if plain { #expect(pretty == batch) }
        }
    }

    @Test(arguments: [11, 12, 13, 14] as [UInt64])
    func canonicalTextIsJSONEncodersByteForByte(seed: UInt64) throws {
        var g = Generator(state: seed)
        var fastCount = 0
        var batchCount = 0
        for index in 0..<2_000 {
            let reading = Self.reading(&g, sequence: Int64(index) - 5)
            let text = String(decoding: try WireCodec.encode(reading), as: UTF8.self)
            if let fast = WireFastPath.canonicalJSON(reading) {
                fastCount += 1
                #expect(fast == text, "seed \(seed) reading \(index)")
                // A stored reading's text reads back on the fast path as the general decoder reads it.
                #expect(WireFastPath.reading(text) == reading, "seed \(seed) reading \(index)")
            }
            #expect(try WireCodec.decodeReading(text) == reading)
            #expect(WireFastPath.reading(text + " x") == nil)
            let batch = Self.batch(&g, number: Int64(index + 1))
            // The heartbeat and the whole batch, against JSONEncoder itself (WireCodec.encode takes
            // the fast path for both).
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            if let heartbeat = batch.heartbeat {
                let general = String(decoding: try encoder.encode(heartbeat), as: UTF8.self)
                if let fast = WireFastPath.canonicalJSON(heartbeat) { #expect(fast == general, "seed \(seed) heartbeat \(index)") }
                #expect(String(decoding: try WireCodec.encode(heartbeat), as: UTF8.self) == general)
            }
            let general = String(decoding: try encoder.encode(batch), as: UTF8.self)
            if let fast = WireFastPath.canonicalJSON(batch) {
                batchCount += 1
                #expect(fast == general, "seed \(seed) batch \(index)")
            }
            #expect(String(decoding: try WireCodec.encode(batch), as: UTF8.self) == general)
        }
        // Escaped boot ids (half) are left to JSONEncoder; small batches and plain ones take the fast path.
        #expect(fastCount > 800)
        #expect(batchCount > 100)
    }

    @Test func theWireDocumentsExampleTakesTheFastPath() throws {
        let data = try WireCodec.encode(Fixtures.batch)
        #expect(WireFastPath.syncBatch([UInt8](data)) == Fixtures.batch)
    }

    /// Everything the general decoder refuses, the fast path gives up on (so the answer is the
    /// general decoder's 400 naming the field), and what it merely does not handle falls back.
    @Test(arguments: [
        "", "{", "[]", "null", #"{"version":1}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:1","readings":[],"version":2}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:2","readings":[],"version":1}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:1","readings":[],"version":1} x"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:1","readings":[],"version":1,"version":1}"#,
        #"{"batch_seq":1.5,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:1","readings":[],"version":1}"#,
        #"{"batch_seq":01,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:1","readings":[],"version":1}"#,
        #"{"batch_seq":99999999999999999999,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:1","readings":[],"version":1}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:1","readings":[{"kind":"hr","seq":1,"t":{"boot_id":"b","mono_ns":1,"wall_ms":null,"wall_trusted":true},"hr":{"bpm":70,"contact":"detected","rr":[70000]}}],"version":1}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:1","readings":[{"kind":"hr","seq":1,"t":{"boot_id":"b","mono_ns":1,"wall_ms":null,"wall_trusted":true},"hr":null}],"version":1}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:1","readings":[{"kind":"fix","seq":1,"t":{"boot_id":"b","mono_ns":1,"wall_ms":null,"wall_trusted":true},"fix":{"mode":3,"lat":1e999}}],"version":1}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:1","readings":[{"kind":"hr","seq":1,"t":{"boot_id":"b","mono_ns":-0,"wall_ms":null,"wall_trusted":true},"hr":{"bpm":70,"contact":"detected","rr":[]}}],"version":1}"#,
        #"{"batch_seq":1,"device_id":"d\u0041","dropped_by_budget":0,"idempotency_key":"dA:1","readings":[],"version":1}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:1","readings":[],"version":1,"extra":true}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:1","readings":[,],"version":1}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"idempotency_key":"d:1","readings":[],"version":truex}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"heartbeat":{"gpsd":"fix","profile":"pilot","store_bytes":0,"store_depth":0,"strap":"connected"},"idempotency_key":"d:1","readings":[],"version":1}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"heartbeat":{"gpsd":"fix","store_bytes":0,"store_depth":0,"strap":"connected","taxi_state":"parked"},"idempotency_key":"d:1","readings":[],"version":1}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"heartbeat":{"gpsd":"fix","run":{"code":"R-1"},"store_bytes":0,"store_depth":0,"strap":"connected"},"idempotency_key":"d:1","readings":[],"version":1}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"heartbeat":{"gpsd":"fix","run":{"code":"R-1","show":true,"lane":2},"store_bytes":0,"store_depth":0,"strap":"connected"},"idempotency_key":"d:1","readings":[],"version":1}"#,
        #"{"batch_seq":1,"device_id":"d","dropped_by_budget":0,"heartbeat":{"gpsd":"fix","run":{"code":"R-1","show":"yes"},"store_bytes":0,"store_depth":0,"strap":"connected"},"idempotency_key":"d:1","readings":[],"version":1}"#,
    ])
    func givesUpOnWhatItDoesNotHandle(text: String) {
        #expect(WireFastPath.syncBatch(Array(text.utf8)) == nil)
    }

    @Test func truncatedInputNeverTraps() throws {
        let bytes = [UInt8](try WireCodec.encode(Fixtures.batch))
        for end in 0..<bytes.count {
            #expect(WireFastPath.syncBatch(Array(bytes[0..<end])) == nil)
        }
    }
}
