import EdgeStore
import EdgeSync
import Foundation
import ServerTestSupport
import Synchronization
import Testing
import TrackMeCore

/// Issue 19: a Pi booted without a real-time clock stamps readings at "1970"; once NTP sets the
/// clock, the batches that carry them go out at their true time, flagged as corrected. The
/// store keeps what was recorded.
@Suite("Clock correction in sync")
struct ClockCorrectionSyncTests {
    static let trueStart: Int64 = 1_795_000_000_000

    @Test("readings stamped before the clock was trusted reach the server at their true time, flagged")
    func correctedBeforeSync() async throws {
        try await SyncFixture.with { f in
            // 60 readings at 1 Hz: the first 40 before NTP (wall = seconds since boot, untrusted),
            // the rest after (true time, trusted).
            let readings = (0..<60).map { second -> NewReading in
                let trusted = second >= 40
                let t = ReadingTimestamp(
                    monotonicNanoseconds: UInt64(second) * 1_000_000_000,
                    bootID: "boot-1970",
                    wallClockMilliseconds: Int64(second) * 1000 + (trusted ? Self.trueStart : 0),
                    wallClockTrusted: trusted
                )
                return NewReading(timestamp: t, payload: .heartRate(HeartRateReading(bpm: 60 + second % 5, contact: .detected)))
            }
            let seqs = try f.store.append(readings)
            var correction = WallClockCorrection()
            correction.learn(readings[40].timestamp)
            let learned = Mutex(correction)
            let engine = SyncEngine(
                store: f.store,
                transport: CurlTransport(baseURL: f.proxy.baseURL),
                configuration: SyncConfiguration(deviceID: deviceID, token: f.token, pollInterval: .milliseconds(10), sendInterval: .zero),
                clock: ContinuousClock(),
                logger: quiet,
                seed: 1,
                correctTimes: { sequence, readings in learned.withLock { $0.corrected(readings, batchSequence: sequence) } }
            )
            try await engine.drain()

            let remote = try await f.stored()
            #expect(remote.count == 60)
            for (index, seq) in seqs.enumerated() {
                let timestamp = try #require(remote[seq]?.timestamp)
                #expect(timestamp.wallClockMilliseconds == Self.trueStart + Int64(index) * 1000, "reading \(index) at its true time")
                #expect(timestamp.wallClockTrusted)
                #expect(timestamp.wallClockCorrected == (index < 40))
            }
            // The device's own record is what was measured.
            let local = try f.store.allReadings().map(\.reading)
            #expect(local.first?.timestamp.wallClockMilliseconds == 0)
            #expect(local.first?.timestamp.wallClockTrusted == false)
        }
    }
}
