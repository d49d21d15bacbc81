import BlueZHeartRate
import Testing
import TrackMeCore

@Suite struct HeartRateMeasurementTests {
    /// Every combination of the five defined flag bits, with and without the reserved bits set,
    /// decodes each present field from a hand-built payload.
    @Test(arguments: 0..<64)
    func everyFlagCombination(_ combination: Int) throws {
        let flags = UInt8(combination & 0x1F) | (combination >= 32 ? 0xE0 : 0)
        var payload: [UInt8] = [flags]
        let wide = flags & 0x01 != 0
        payload += wide ? [0x2C, 0x01] : [0x48]
        if flags & 0x08 != 0 { payload += [0x34, 0x12] }
        if flags & 0x10 != 0 { payload += [0x00, 0x04, 0x21, 0x03] }

        let reading = try HeartRateMeasurement.decode(payload)

        #expect(reading.bpm == (wide ? 300 : 72))
        let expectedContact: SensorContact =
            switch (flags >> 1) & 0b11 {
            case 0b11: .detected
            case 0b10: .notDetected
            default: .unsupported
            }
        #expect(reading.contact == expectedContact)
        #expect(reading.energyExpendedKilojoules == (flags & 0x08 != 0 ? 0x1234 : nil))
        #expect(reading.rrIntervals == (flags & 0x10 != 0 ? [1024, 801] : []))
        #expect(reading.rrMilliseconds == (flags & 0x10 != 0 ? [1000, 782] : []))
    }

    @Test func uint16BeatsAboveAByte() throws {
        let reading = try HeartRateMeasurement.decode([0x01, 0xFF, 0xFF])
        #expect(reading.bpm == 65535)
        #expect(HeartRateMeasurement.encode(HeartRateReading(bpm: 256, contact: .unsupported)) == [0x01, 0x00, 0x01])
        #expect(HeartRateMeasurement.encode(HeartRateReading(bpm: 72, contact: .unsupported), forceUInt16: true) == [0x01, 0x48, 0x00])
    }

    /// With the default ATT MTU of 23, a notification carries 20 bytes of value: 9 RR intervals
    /// after an 8-bit rate, 8 with energy expended, 7 with a 16-bit rate and energy.
    @Test(arguments: [
        (false, false, 9), (false, true, 8), (true, false, 8), (true, true, 7),
    ])
    func maximumRRCountForDefaultMTU(wide: Bool, energy: Bool, expectedCount: Int) throws {
        let reading = HeartRateReading(
            bpm: wide ? 300 : 60,
            contact: .detected,
            energyExpendedKilojoules: energy ? 500 : nil,
            rrIntervals: (0..<20).map { UInt16(700 + $0) }
        )
        let payload = HeartRateMeasurement.encode(reading)
        #expect(payload.count <= HeartRateMeasurement.defaultMaximumPayload)
        let decoded = try HeartRateMeasurement.decode(payload)
        #expect(decoded.rrIntervals == Array(reading.rrIntervals.prefix(expectedCount)))
        #expect(decoded.bpm == reading.bpm && decoded.energyExpendedKilojoules == reading.energyExpendedKilojoules)
    }

    @Test func fullTwentyBytePayloadWithNineIntervals() throws {
        let payload: [UInt8] = [0x16, 0x3C] + (0..<9).flatMap { [UInt8(0x10 + $0), 0x03] }
        #expect(payload.count == 20)
        #expect(try HeartRateMeasurement.decode(payload).rrIntervals.count == 9)
    }

    /// Cutting the payload anywhere: inside a field it throws at that field's first byte; at an RR
    /// boundary after the first interval it is a valid payload with fewer intervals.
    @Test(arguments: 0..<9)
    func truncationAtEveryByteBoundary(length: Int) throws {
        let full: [UInt8] = [0x1F, 0x2C, 0x01, 0x34, 0x12, 0x00, 0x04, 0x21, 0x03]
        let prefix = Array(full.prefix(length))
        if length == 7 {
            #expect(try HeartRateMeasurement.decode(prefix).rrIntervals == [1024])
            return
        }
        let fieldStart = [0: 0, 1: 1, 2: 1, 3: 3, 4: 3, 5: 5, 6: 5, 8: 7][length]
        let error = try #require(throws: PayloadDecodingError.self) { try HeartRateMeasurement.decode(prefix) }
        #expect(error.code == .truncated)
        #expect(error.offset == fieldStart)
    }

    @Test func strayByteWithoutRRFlagIsInconsistent() throws {
        let error = try #require(throws: PayloadDecodingError.self) { try HeartRateMeasurement.decode([0x06, 0x3C, 0x00]) }
        #expect(error.code == .trailingBytes)
        #expect(error.offset == 2)
    }

    @Test func oddByteAfterIntervalsIsTruncation() throws {
        let error = try #require(throws: PayloadDecodingError.self) { try HeartRateMeasurement.decode([0x10, 0x3C, 0x00, 0x04, 0x01]) }
        #expect(error.code == .truncated)
        #expect(error.offset == 4)
    }

    @Test func noInputOfUpToTwoBytesTraps() {
        var decoded = 0
        for length in 0...2 {
            for value in 0..<(1 << (8 * length)) {
                let bytes = (0..<length).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
                if (try? HeartRateMeasurement.decode(bytes)) != nil { decoded += 1 }
            }
        }
        // Only two-byte payloads whose flags ask for nothing beyond an 8-bit rate decode: flag bits
        // 0, 3 and 4 clear (32 flag values) times 256 rates.
        #expect(decoded == 32 * 256)
    }

    /// Real payloads logged from a Polar H7 and a Mio Fuse.
    @Test func polarH7Capture() throws {
        let payloads = try Fixtures.hexPayloads("polar_h7_gatttool_readme.hex")
        let readings = try payloads.map { try HeartRateMeasurement.decode(#require(Hex.decode($0, ignoring: " \t\n\r:"))) }
        #expect(
            readings == [
                HeartRateReading(bpm: 60, contact: .detected),
                HeartRateReading(bpm: 60, contact: .detected, rrIntervals: [0x0411]),
                HeartRateReading(bpm: 60, contact: .detected, rrIntervals: [0x03F5]),
            ]
        )
        #expect(readings[1].rrMilliseconds == [1017])
    }

    @Test func mioFuseCapture() throws {
        let payloads = try Fixtures.hexPayloads("mio_global_fuse_gatttool_2016.hex")
        #expect(payloads.count == 16)
        let readings = try payloads.map { try HeartRateMeasurement.decode(#require(Hex.decode($0, ignoring: " \t\n\r:"))) }
        #expect(readings.prefix(8).allSatisfy { $0 == HeartRateReading(bpm: 0, contact: .unsupported) })
        #expect(readings.dropFirst(8).map(\.bpm) == [86, 83, 80, 78, 76, 74, 73, 73])
        #expect(readings[10].rrIntervals == [768, 768])
        #expect(readings.allSatisfy { $0.contact == .unsupported })
    }

    /// The encoder the simulated strap uses reproduces the real straps' bytes exactly.
    @Test(arguments: ["polar_h7_gatttool_readme.hex", "mio_global_fuse_gatttool_2016.hex"])
    func encoderReproducesCapturedBytes(_ file: String) throws {
        for text in try Fixtures.hexPayloads(file) {
            let bytes = try #require(Hex.decode(text, ignoring: " \t\n\r:"))
            #expect(HeartRateMeasurement.encode(try HeartRateMeasurement.decode(bytes)) == bytes)
        }
    }

    @Test func hexParsing() {
        #expect(Hex.decode("063c1104", ignoring: " \t\n\r:") == [0x06, 0x3C, 0x11, 0x04])
        #expect(Hex.decode("06 3C 11 04", ignoring: " \t\n\r:") == [0x06, 0x3C, 0x11, 0x04])
        #expect(Hex.decode("063", ignoring: " \t\n\r:") == nil)
        #expect(Hex.decode("0g", ignoring: " \t\n\r:") == nil)
        #expect(Hex.decode("", ignoring: " \t\n\r:") == [])
    }

    @Test func bodySensorLocationAndBattery() throws {
        #expect(try BodySensorLocation.decode([0x01]) == .chest)
        #expect(try BodySensorLocation.decode([0x02]) == .wrist)
        #expect(throws: PayloadDecodingError.self) { try BodySensorLocation.decode([0x07]) }
        #expect(throws: PayloadDecodingError.self) { try BodySensorLocation.decode([]) }
        #expect(try BatteryLevel.decode([0x57]) == 87)
        #expect(try BatteryLevel.decode(BatteryLevel.encode(100)) == 100)
        let error = try #require(throws: PayloadDecodingError.self) { try BatteryLevel.decode([101]) }
        #expect(error.code == .invalidValue)
        #expect(throws: PayloadDecodingError.self) { try BatteryLevel.decode([50, 0]) }
    }
}
