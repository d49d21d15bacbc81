/// A fast path for the one wire message the server reads thousands of times a second, the sync
/// batch, and for the canonical JSON of a reading it stores (through `Codable`, decoding and
/// encoding would be a quarter of the server's CPU per batch, `simulations/BENCHMARKS.md`).
///
/// It never decides anything `WireCodec` would decide otherwise: it is strict, and gives up
/// (nil) on anything it is not sure of — an unknown or repeated key, a string with an escape or
/// a byte outside printable ASCII, a number with a fraction where an integer belongs, a wrong
/// version or idempotency key, malformed JSON. The caller then decodes with `WireCodec`, which
/// gives the field-naming error (or, for what the fast path merely does not handle, the value).
/// Whatever it does return equals what `WireCodec` returns for the same bytes; the `wire-codec`
/// fuzz target checks both properties. It never traps: every read is bounds-checked.
public enum WireFastPath {
    /// The batch, or nil when `WireCodec.decode(SyncBatch.self, ...)` must decide.
    public static func syncBatch(_ bytes: [UInt8]) -> SyncBatch? {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = FastJSONReader(buffer)
            guard let batch = reader.syncBatch(), reader.atEnd() else { return nil }
            return batch
        }
    }

    /// One reading (a stored row's body), or nil when `WireCodec.decode(WireReading.self, ...)`
    /// must decide.
    public static func reading(_ text: String) -> WireReading? {
        var text = text
        return text.withUTF8 { buffer in
            var reader = FastJSONReader(buffer)
            guard let reading = reader.reading(), reader.atEnd() else { return nil }
            return reading
        }
    }

    /// `WireCodec.encode(reading)` as text, byte for byte, when its strings need no escaping and
    /// its numbers are finite; nil otherwise.
    public static func canonicalJSON(_ reading: WireReading) -> String? {
        guard isPlain(reading.timestamp.bootID) else { return nil }
        var text: String
        switch reading.payload {
        case .heartRate(let hr):
            text = "{\"hr\":{\"bpm\":\(hr.bpm),\"contact\":\"\(hr.contact.rawValue)\",\"energy_kj\":"
            text += hr.energyExpendedKilojoules.map { "\($0)" } ?? "null"
            text += ",\"rr\":["
            for (index, rr) in hr.rrIntervals.enumerated() {
                if index > 0 { text += "," }
                text += "\(rr)"
            }
            text += "]},\"kind\":\"hr\""
        case .position(let fix):
            guard fix.time.map(isPlain) ?? true else { return nil }
            // Every key is written, null when absent (the type's `encode(to:)`), sorted.
            guard let altitudeHAE = number(fix.altitudeHAE), let altitudeMSL = number(fix.altitudeMSL), let eph = number(fix.horizontalError),
                let latitude = number(fix.latitude), let longitude = number(fix.longitude), let speed = number(fix.speed),
                let track = number(fix.track)
            else { return nil }
            text = "{\"fix\":{\"alt_hae\":\(altitudeHAE),\"alt_msl\":\(altitudeMSL),\"eph\":\(eph),\"lat\":\(latitude),\"lon\":\(longitude)"
            text += ",\"mode\":\(fix.mode.rawValue),\"speed\":\(speed),\"time\":" + (fix.time.map { "\"\($0)\"" } ?? "null")
            text += ",\"track\":\(track)},\"kind\":\"fix\""
        }
        text += ",\"seq\":\(reading.sequence),\"t\":"
        appendTimestamp(reading.timestamp, to: &text)
        text += "}"
        return text
    }

    /// `WireCodec.encode(batch)` as text, byte for byte, when every part has a canonical text
    /// (plain strings, finite numbers, a heartbeat without the nested fields); nil otherwise.
    /// The device encodes every batch it sends, so this is the agent's hot path too.
    public static func canonicalJSON(_ batch: SyncBatch) -> String? {
        guard isPlain(batch.deviceID), batch.storeEpoch.map(isPlain) ?? true else { return nil }
        var text = "{\"batch_seq\":\(batch.batchSequence),\"device_id\":\"\(batch.deviceID)\",\"dropped_by_budget\":\(batch.droppedByBudget)"
        if let heartbeat = batch.heartbeat {
            guard let beat = canonicalJSON(heartbeat) else { return nil }
            text += ",\"heartbeat\":" + beat
        }
        text += ",\"idempotency_key\":\"\(batch.idempotencyKey)\",\"readings\":["
        for (index, reading) in batch.readings.enumerated() {
            guard let one = canonicalJSON(reading) else { return nil }
            if index > 0 { text += "," }
            text += one
        }
        text += "]"
        if let epoch = batch.storeEpoch { text += ",\"store_epoch\":\"\(epoch)\"" }
        text += ",\"version\":\(batch.version)}"
        return text
    }

    /// A double as `JSONEncoder` writes it (its shortest round-trip text, without a trailing
    /// `.0`), `null` for nil; nil for what `JSONEncoder` refuses (NaN, infinities).
    static func number(_ value: Double?) -> String? {
        guard let value else { return "null" }
        guard value.isFinite else { return nil }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text
    }

    /// `WireCodec.encode(heartbeat)` as text, byte for byte, when its strings need no escaping.
    public static func canonicalJSON(_ heartbeat: DeviceHeartbeat) -> String? {
        let strings = [heartbeat.strap, heartbeat.gpsd, heartbeat.bodySensorLocation, heartbeat.storeState, heartbeat.storeProblem]
        // The care conflicts and overrides and the conditions' timings are left to JSONEncoder;
        // the profile, a taxi's state and a runner's run are what every device of its kind sends.
        guard strings.allSatisfy({ $0.map(isPlain) ?? true }), heartbeat.careConflicts == nil, heartbeat.careOverrides == nil,
            heartbeat.conditionSeconds == nil, heartbeat.run.map({ isPlain($0.code) }) ?? true
        else { return nil }
        // Sorted keys; optional fields are left out when nil (synthesized `encodeIfPresent`).
        var fields: [String] = []
        if let value = heartbeat.batteryLow { fields.append("\"battery_low\":\(value)") }
        if let value = heartbeat.batteryPercent { fields.append("\"battery_pct\":\(value)") }
        if let value = heartbeat.bodySensorLocation { fields.append("\"body_location\":\"\(value)\"") }
        if let value = heartbeat.careVersion { fields.append("\"care_version\":\(value)") }
        if let value = heartbeat.deviceBatteryPercent { fields.append("\"device_battery_pct\":\(value)") }
        if let value = heartbeat.devicePower { fields.append("\"device_power\":\"\(value.rawValue)\"") }
        if let value = heartbeat.devicePowerLevel { fields.append("\"device_power_level\":\"\(value.rawValue)\"") }
        fields.append("\"gpsd\":\"\(heartbeat.gpsd)\"")
        if let value = heartbeat.monitoringPaused { fields.append("\"monitoring_paused\":\(value)") }
        if let value = heartbeat.profile { fields.append("\"profile\":\"\(value.rawValue)\"") }
        if let value = heartbeat.quarantinedReadings { fields.append("\"quarantined\":\(value)") }
        if let run = heartbeat.run {
            var runFields: [String] = []
            if let value = run.checkedInMilliseconds { runFields.append("\"checked_in_ms\":\(value)") }
            runFields.append("\"code\":\"\(run.code)\"")
            runFields.append("\"health\":\(run.shareHealth)")
            runFields.append("\"show\":\(run.showToSpectators)")
            fields.append("\"run\":{" + runFields.joined(separator: ",") + "}")
        }
        fields.append("\"store_bytes\":\(heartbeat.storeBytes)")
        fields.append("\"store_depth\":\(heartbeat.storeDepth)")
        if let value = heartbeat.storeProblem { fields.append("\"store_problem\":\"\(value)\"") }
        if let value = heartbeat.storeState { fields.append("\"store_state\":\"\(value)\"") }
        fields.append("\"strap\":\"\(heartbeat.strap)\"")
        if let value = heartbeat.taxiState { fields.append("\"taxi_state\":\"\(value.rawValue)\"") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    private static func appendTimestamp(_ t: ReadingTimestamp, to text: inout String) {
        text += "{\"boot_id\":\"\(t.bootID)\",\"mono_ns\":\(t.monotonicNanoseconds),"
        if t.wallClockCorrected { text += "\"wall_corrected\":true," }
        text += "\"wall_ms\":" + (t.wallClockMilliseconds.map { "\($0)" } ?? "null")
        text += ",\"wall_trusted\":\(t.wallClockTrusted)}"
    }

    /// Printable ASCII that `JSONEncoder` writes as it is (it escapes `"`, `\` and `/`).
    static func isPlain(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") && $0 != UInt8(ascii: "/") }
    }
}

/// A strict, bounds-checked reader over the batch's JSON. Every method returns nil (and the
/// whole decode gives up) on anything unexpected; nothing here traps.
struct FastJSONReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func atEnd() -> Bool {
        skipSpace()
        return index == bytes.count
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        skipSpace()
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count else { return false }
        let matches = word.withUTF8Buffer { expected in
            for offset in 0..<count where bytes[index + offset] != expected[offset] { return false }
            return true
        }
        guard matches else { return false }
        index += count
        // A literal runs into the next token only through a delimiter.
        if index < bytes.count, Self.isWordByte(bytes[index]) { return false }
        return true
    }

    private static func isWordByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "+")
    }

    /// `null` (consumed) or not (nothing consumed).
    private mutating func null() -> Bool {
        let start = index
        if literal("null") { return true }
        index = start
        return false
    }

    /// A string of printable ASCII without escapes.
    mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return text
            }
            guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        return nil
    }

    /// An integer in JSON's grammar (no fraction, no exponent), within UInt64's magnitude.
    private mutating func integerParts() -> (negative: Bool, magnitude: UInt64)? {
        skipSpace()
        var negative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        let start = index
        var magnitude: UInt64 = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            let (times, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            magnitude = sum
            index += 1
        }
        let digits = index - start
        guard digits > 0 else { return nil }
        if digits > 1, bytes[start] == UInt8(ascii: "0") { return nil }
        if index < bytes.count, Self.isWordByte(bytes[index]) { return nil }
        return (negative, magnitude)
    }

    mutating func int64() -> Int64? {
        guard let (negative, magnitude) = integerParts() else { return nil }
        if negative {
            // `-0` is left to the general decoder.
            guard magnitude > 0, magnitude <= UInt64(Int64.max) else { return nil }
            return -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { return nil }
        return Int64(magnitude)
    }

    mutating func uint64() -> UInt64? {
        guard let (negative, magnitude) = integerParts() else { return nil }
        return negative ? nil : magnitude
    }

    mutating func int() -> Int? { int64().flatMap { Int(exactly: $0) } }

    mutating func uint16() -> UInt16? { uint64().flatMap { UInt16(exactly: $0) } }

    mutating func bool() -> Bool? {
        let start = index
        if literal("true") { return true }
        index = start
        if literal("false") { return false }
        index = start
        return nil
    }

    /// A number in JSON's grammar, read as `Double` (finite only).
    mutating func double() -> Double? {
        skipSpace()
        let start = index
        func digits() -> Int {
            let first = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
            return index - first
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integerStart = index
        let integerDigits = digits()
        guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return nil }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return nil }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return nil }
        }
        if index < bytes.count, Self.isWordByte(bytes[index]) { return nil }
        // Long texts are left to the general decoder (its rounding of them is its own).
        guard index - start <= 32 else { return nil }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// Reads `{ "key": value, ... }`, calling `field` for each key; nil if a key repeats, is
    /// unknown (`field` returns false) or the object is malformed.
    mutating func object(_ field: (inout FastJSONReader, String) -> Bool) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        var seen = Set<String>()
        if take(UInt8(ascii: "}")) { return true }
        while true {
            guard let key = string(), seen.insert(key).inserted, take(UInt8(ascii: ":")), field(&self, key) else { return false }
            if take(UInt8(ascii: ",")) { continue }
            return take(UInt8(ascii: "}"))
        }
    }

    /// Reads `[ element, ... ]`; false if an element fails or the array is malformed.
    mutating func array(_ element: (inout FastJSONReader) -> Bool) -> Bool {
        guard take(UInt8(ascii: "[")) else { return false }
        if take(UInt8(ascii: "]")) { return true }
        while true {
            guard element(&self) else { return false }
            if take(UInt8(ascii: ",")) { continue }
            return take(UInt8(ascii: "]"))
        }
    }

    /// An optional value: `null` gives `.some(nil)`; a value gives `.some(value)`; a bad value nil.
    private mutating func optional<T>(_ read: (inout FastJSONReader) -> T?) -> T?? {
        if null() { return .some(nil) }
        guard let value = read(&self) else { return nil }
        return .some(value)
    }

    // MARK: - The batch

    mutating func syncBatch() -> SyncBatch? {
        var version: Int?
        var deviceID: String?
        var batchSequence: Int64?
        var key: String?
        var storeEpoch: String?
        var dropped: Int64?
        var heartbeat: DeviceHeartbeat?
        var readings: [WireReading]?
        let ok = object { reader, name in
            switch name {
            case "version":
                version = reader.int()
                return version != nil
            case "device_id":
                deviceID = reader.string()
                return deviceID != nil
            case "batch_seq":
                batchSequence = reader.int64()
                return batchSequence != nil
            case "idempotency_key":
                key = reader.string()
                return key != nil
            case "store_epoch":
                guard let value = reader.optional({ $0.string() }) else { return false }
                storeEpoch = value
                return true
            case "dropped_by_budget":
                dropped = reader.int64()
                return dropped != nil
            case "heartbeat":
                guard let value = reader.optional({ $0.heartbeat() }) else { return false }
                heartbeat = value
                return true
            case "readings":
                var list: [WireReading] = []
                guard
                    reader.array({ reader in
                        guard let reading = reader.reading() else { return false }
                        list.append(reading)
                        return true
                    })
                else { return false }
                readings = list
                return true
            default: return false
            }
        }
        guard ok, version == SyncBatch.currentVersion, let deviceID, let batchSequence, let key, let dropped, let readings,
            key == SyncBatch.idempotencyKey(deviceID: deviceID, batchSequence: batchSequence)
        else { return nil }
        return SyncBatch(
            deviceID: deviceID,
            batchSequence: batchSequence,
            storeEpoch: storeEpoch,
            droppedByBudget: dropped,
            heartbeat: heartbeat,
            readings: readings
        )
    }

    mutating func reading() -> WireReading? {
        var sequence: Int64?
        var kind: WireReading.Kind?
        var timestamp: ReadingTimestamp?
        var heartRate: HeartRateReading??
        var fix: PositionFix??
        let ok = object { reader, name in
            switch name {
            case "seq":
                sequence = reader.int64()
                return sequence != nil
            case "kind":
                kind = reader.string().flatMap(WireReading.Kind.init(rawValue:))
                return kind != nil
            case "t":
                timestamp = reader.timestamp()
                return timestamp != nil
            case "hr":
                heartRate = reader.optional { $0.heartRate() }
                return heartRate != nil
            case "fix":
                fix = reader.optional { $0.position() }
                return fix != nil
            default: return false
            }
        }
        guard ok, let sequence, let kind, let timestamp else { return nil }
        switch kind {
        case .heartRate:
            guard let heartRate = heartRate.flatMap({ $0 }) else { return nil }
            return WireReading(sequence: sequence, timestamp: timestamp, payload: .heartRate(heartRate))
        case .position:
            guard let fix = fix.flatMap({ $0 }) else { return nil }
            return WireReading(sequence: sequence, timestamp: timestamp, payload: .position(fix))
        }
    }

    mutating func timestamp() -> ReadingTimestamp? {
        var mono: UInt64?
        var boot: String?
        var wall: Int64?
        var trusted: Bool?
        var corrected: Bool?
        let ok = object { reader, name in
            switch name {
            case "mono_ns":
                mono = reader.uint64()
                return mono != nil
            case "boot_id":
                boot = reader.string()
                return boot != nil
            case "wall_ms":
                guard let value = reader.optional({ $0.int64() }) else { return false }
                wall = value
                return true
            case "wall_trusted":
                trusted = reader.bool()
                return trusted != nil
            case "wall_corrected":
                guard let value = reader.optional({ $0.bool() }) else { return false }
                corrected = value
                return true
            default: return false
            }
        }
        guard ok, let mono, let boot, let trusted else { return nil }
        return ReadingTimestamp(
            monotonicNanoseconds: mono,
            bootID: boot,
            wallClockMilliseconds: wall,
            wallClockTrusted: trusted,
            wallClockCorrected: corrected ?? false
        )
    }

    mutating func heartRate() -> HeartRateReading? {
        var bpm: Int?
        var contact: SensorContact?
        var energy: Int?
        var rr: [UInt16]?
        let ok = object { reader, name in
            switch name {
            case "bpm":
                bpm = reader.int()
                return bpm != nil
            case "contact":
                contact = reader.string().flatMap(SensorContact.init(rawValue:))
                return contact != nil
            case "energy_kj":
                guard let value = reader.optional({ $0.int() }) else { return false }
                energy = value
                return true
            case "rr":
                var list: [UInt16] = []
                guard
                    reader.array({ reader in
                        guard let value = reader.uint16() else { return false }
                        list.append(value)
                        return true
                    })
                else { return false }
                rr = list
                return true
            default: return false
            }
        }
        guard ok, let bpm, let contact, let rr else { return nil }
        return HeartRateReading(bpm: bpm, contact: contact, energyExpendedKilojoules: energy, rrIntervals: rr)
    }

    mutating func position() -> PositionFix? {
        var fix = PositionFix(mode: .none)
        var mode: FixMode?
        let ok = object { reader, name in
            func number(_ assign: (Double?) -> Void) -> Bool {
                guard let value = reader.optional({ $0.double() }) else { return false }
                assign(value)
                return true
            }
            switch name {
            case "time":
                guard let value = reader.optional({ $0.string() }) else { return false }
                fix.time = value
                return true
            case "mode":
                mode = reader.int().flatMap(FixMode.init(rawValue:))
                return mode != nil
            case "lat": return number { fix.latitude = $0 }
            case "lon": return number { fix.longitude = $0 }
            case "alt_hae": return number { fix.altitudeHAE = $0 }
            case "alt_msl": return number { fix.altitudeMSL = $0 }
            case "speed": return number { fix.speed = $0 }
            case "track": return number { fix.track = $0 }
            case "eph": return number { fix.horizontalError = $0 }
            default: return false
            }
        }
        guard ok, let mode else { return nil }
        fix.mode = mode
        return fix
    }

    mutating func heartbeat() -> DeviceHeartbeat? {
        var strap: String?
        var gpsd: String?
        var depth: Int?
        var bytesHeld: Int64?
        var heartbeat = DeviceHeartbeat(strap: "", gpsd: "", storeDepth: 0, storeBytes: 0)
        let ok = object { reader, name in
            func optionalString(_ assign: (String?) -> Void) -> Bool {
                guard let value = reader.optional({ $0.string() }) else { return false }
                assign(value)
                return true
            }
            func optionalBool(_ assign: (Bool?) -> Void) -> Bool {
                guard let value = reader.optional({ $0.bool() }) else { return false }
                assign(value)
                return true
            }
            switch name {
            case "strap":
                strap = reader.string()
                return strap != nil
            case "gpsd":
                gpsd = reader.string()
                return gpsd != nil
            case "store_depth":
                depth = reader.int()
                return depth != nil
            case "store_bytes":
                bytesHeld = reader.int64()
                return bytesHeld != nil
            case "battery_pct":
                guard let value = reader.optional({ $0.int() }) else { return false }
                heartbeat.batteryPercent = value
                return true
            case "battery_low": return optionalBool { heartbeat.batteryLow = $0 }
            case "monitoring_paused": return optionalBool { heartbeat.monitoringPaused = $0 }
            case "body_location": return optionalString { heartbeat.bodySensorLocation = $0 }
            case "store_state": return optionalString { heartbeat.storeState = $0 }
            case "store_problem": return optionalString { heartbeat.storeProblem = $0 }
            case "quarantined":
                guard let value = reader.optional({ $0.int64() }) else { return false }
                heartbeat.quarantinedReadings = value
                return true
            case "care_version":
                guard let value = reader.optional({ $0.int64() }) else { return false }
                heartbeat.careVersion = value
                return true
            case "device_battery_pct":
                guard let value = reader.optional({ $0.int() }) else { return false }
                heartbeat.deviceBatteryPercent = value
                return true
            case "device_power":
                // An unknown spelling is left to JSONDecoder, which names it in its error.
                guard let value = reader.optional({ $0.string() }) else { return false }
                guard let value else { return true }
                guard let source = DevicePower.Source(rawValue: value) else { return false }
                heartbeat.devicePower = source
                return true
            case "device_power_level":
                guard let value = reader.optional({ $0.string() }) else { return false }
                guard let value else { return true }
                guard let level = PowerWatch.Level(rawValue: value) else { return false }
                heartbeat.devicePowerLevel = level
                return true
            case "profile":
                guard let value = reader.optional({ $0.string() }) else { return false }
                guard let value else { return true }
                guard let profile = DeviceProfile(rawValue: value) else { return false }
                heartbeat.profile = profile
                return true
            case "taxi_state":
                guard let value = reader.optional({ $0.string() }) else { return false }
                guard let value else { return true }
                guard let state = TaxiAvailability(rawValue: value) else { return false }
                heartbeat.taxiState = state
                return true
            case "run":
                guard let value = reader.optional({ $0.runParticipation() }) else { return false }
                heartbeat.run = value
                return true
            default: return false
            }
        }
        guard ok, let strap, let gpsd, let depth, let bytesHeld else { return nil }
        heartbeat.strap = strap
        heartbeat.gpsd = gpsd
        heartbeat.storeDepth = depth
        heartbeat.storeBytes = bytesHeld
        return heartbeat
    }

    /// A runner's `run` as `RunParticipation`'s decoder reads it: `code` and `show` required,
    /// `health` false when absent, `checked_in_ms` optional.
    mutating func runParticipation() -> RunParticipation? {
        var code: String?
        var show: Bool?
        var health: Bool?
        var checkedIn: Int64?
        let ok = object { reader, name in
            switch name {
            case "code":
                code = reader.string()
                return code != nil
            case "show":
                show = reader.bool()
                return show != nil
            case "health":
                guard let value = reader.optional({ $0.bool() }) else { return false }
                health = value
                return true
            case "checked_in_ms":
                guard let value = reader.optional({ $0.int64() }) else { return false }
                checkedIn = value
                return true
            default: return false
            }
        }
        guard ok, let code, let show else { return nil }
        return RunParticipation(code: code, showToSpectators: show, shareHealth: health ?? false, checkedInMilliseconds: checkedIn)
    }
}
