import EdgeStore
import EdgeSync
import Foundation
import ServerTestSupport
import Testing
import TrackMeCore
import TrackMeServer

@testable import TrackMeAgent

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 19: the clock jumps from 1970 to the right time mid-trace (NTP synchronised the Pi);
/// the agent's sync engine, with the anchors a trusted timestamp taught, sends every reading at
/// its true time, and the real server files every one there (`placed_ms`, no `time_flag`).
@Suite("clock correction against the server", .serialized)
struct ClockCorrectionServerTests {
    @Test("every reading of the trace is filed at its true time, the ones before the jump flagged corrected")
    func serverFilesTrueTimes() async throws {
        let directory = try TemporaryDirectory()
        try await InProcessServer.with(
            configure: { $0.adminToken = "cc-admin" },
            { running in
                let server = running.server
                let port = running.port
                let credentials = try await server.enrolDevice(deviceID: "pi-clock", person: PersonProfile(name: "Ada", age: 67))

                // The true start of the trace: two minutes ago (the server refuses times before enrolment).
                let trueStart = Int64(Date().timeIntervalSince1970 * 1000) - 120_000
                let boot = "boot-\(UUID().uuidString)"
                let anchors = WallClockAnchors()
                let readings = (0..<60).map { second -> NewReading in
                    // Until second 40 the Pi's clock says 1970 (seconds since boot) and is untrusted.
                    let trusted = second >= 40
                    let t = ReadingTimestamp(
                        monotonicNanoseconds: UInt64(1000 + second) * 1_000_000_000,
                        bootID: boot,
                        wallClockMilliseconds: trusted ? trueStart + Int64(second) * 1000 : Int64(1000 + second) * 1000,
                        wallClockTrusted: trusted
                    )
                    if trusted { anchors.learn(t) }
                    return NewReading(timestamp: t, payload: .heartRate(HeartRateReading(bpm: 58 + second % 4, contact: .detected)))
                }
                try FileManager.default.createDirectory(atPath: directory.file("data"), withIntermediateDirectories: true)
                let store = try ReadingStore(
                    configuration: EdgeStore.StoreConfiguration(path: directory.file("data/agent.sqlite")),
                    logger: quietLogger
                )
                defer { store.close() }
                _ = try store.append(readings)
                let engine = SyncEngine(
                    store: store,
                    transport: CurlTransport(baseURL: try #require(URL(string: "http://127.0.0.1:\(port)"))),
                    configuration: SyncConfiguration(
                        deviceID: "pi-clock",
                        token: credentials.token,
                        pollInterval: .milliseconds(10),
                        sendInterval: .zero
                    ),
                    clock: ContinuousClock(),
                    logger: quietLogger,
                    seed: 7,
                    correctTimes: { anchors.corrected($1, batchSequence: $0) }
                )
                try await engine.drain()

                var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(port)/v1/devices/pi-clock/readings")))
                request.setValue("Bearer cc-admin", forHTTPHeaderField: "Authorization")
                let (data, _) = try await URLSession.shared.data(for: request)
                struct Page: Decodable {
                    struct Row: Decodable {
                        var placed_ms: Int64
                        var time_flag: String?
                        var t: ReadingTimestamp
                    }
                    var readings: [Row]
                }
                let rows = try JSONDecoder().decode(Page.self, from: data).readings
                #expect(rows.count == 60)
                for (second, row) in rows.enumerated() {
                    #expect(row.placed_ms == trueStart + Int64(second) * 1000, "reading \(second) filed at its true time")
                    #expect(row.time_flag == nil)
                    #expect(row.t.wallClockCorrected == (second < 40))
                }
            }
        )
    }
}
