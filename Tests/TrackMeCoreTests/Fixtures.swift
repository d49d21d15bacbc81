import TrackMeCore

enum Fixtures {
    static let t0 = ReadingTimestamp(
        monotonicNanoseconds: 12_000_000_000,
        bootID: "3f1c2d9e-8a51-4c1e-9d7b-2a4e5f6a7b8c",
        wallClockMilliseconds: 1_795_000_000_000,
        wallClockTrusted: true
    )

    static let heartRate = WireReading(
        sequence: 1001,
        timestamp: t0,
        payload: .heartRate(HeartRateReading(bpm: 72, contact: .detected, energyExpendedKilojoules: nil, rrIntervals: [843, 829]))
    )

    static let fix = WireReading(
        sequence: 1002,
        timestamp: ReadingTimestamp(
            monotonicNanoseconds: 12_250_000_000,
            bootID: t0.bootID,
            wallClockMilliseconds: nil,
            wallClockTrusted: false
        ),
        payload: .position(
            PositionFix(
                time: "2034-11-27T20:26:40.000Z",
                mode: .threeDimensional,
                latitude: 44.068934,
                longitude: -121.3146,
                altitudeHAE: 1103.2,
                altitudeMSL: nil,
                speed: 0.03,
                track: nil,
                horizontalError: 4.1
            )
        )
    )

    static let batch = SyncBatch(
        deviceID: "pi-0042",
        batchSequence: 17,
        droppedByBudget: 0,
        heartbeat: DeviceHeartbeat(strap: "connected", gpsd: "fix", storeDepth: 2, storeBytes: 65536, batteryPercent: 81),
        readings: [heartRate, fix]
    )

    static let alert = AlertRecord(
        id: "6b0f7a43-1f2e-4c55-9a61-0d3e8f2b7c10",
        deviceID: "pi-0042",
        kind: .noPulse,
        state: .raised,
        firstCritical: t0,
        raised: t0,
        triggeringReadings: [TimedHeartRate(reading: HeartRateReading(bpm: 0, contact: .detected), timestamp: t0)],
        position: AlertPosition(
            fix: PositionFix(time: "2034-11-27T20:26:40.000Z", mode: .threeDimensional, latitude: 44.068934, longitude: -121.3146),
            ageMilliseconds: 800
        )
    )
}
