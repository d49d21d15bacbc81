import EdgeStore
import EdgeSync
import Foundation
import Logging
import Synchronization
import Testing
import TrackMeCore
import TrackMeSystem

@testable import TrackMeServer

#if PostgreSQL
/// The agent's own failover (`server.urls`, issue 22): its sync engine over `FailoverTransport`
/// to two real `trackme-server` processes on one PostgreSQL; the first is killed -9 in the middle
/// of the drain, and the agent carries on through the second with nothing lost or stored twice.
@Suite("Agent failover between instances", .serialized)
struct AgentFailoverTests {
    @Test("instance A killed mid-drain: the agent's batches go on through B; every reading stored exactly once")
    func killedInstanceFailsOver() async throws {
        let database = try await PostgresFixture.shared.createDatabase()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-failover-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = try await MultiInstanceTests.ServerProcess(database: database, directory: directory, name: "a")
        defer { a.stop() }
        let b = try await MultiInstanceTests.ServerProcess(database: database, directory: directory, name: "b")
        defer { b.stop() }
        let urlA = try #require(URL(string: "http://127.0.0.1:\(a.port)"))
        let urlB = try #require(URL(string: "http://127.0.0.1:\(b.port)"))

        // Enrolled through A.
        let deviceID = "pi-failover"
        let enrolBody = try JSONSerialization.data(withJSONObject: ["device_id": deviceID, "person": ["name": "F", "age": 50]])
        let enrolled = try await CurlTransport(baseURL: urlA).post(
            path: "v1/devices",
            headers: ["Authorization": "Bearer \(TestServer.adminToken)", "Content-Type": "application/json"],
            body: Array(enrolBody)
        )
        try #require(enrolled.status == 201)
        let token = try #require((try JSONSerialization.jsonObject(with: Data(enrolled.body)) as? [String: Any])?["token"] as? String)

        let store = try ReadingStore(
            configuration: StoreConfiguration(path: directory.appendingPathComponent("agent.sqlite").path),
            logger: Logger(label: "quiet")
        )
        defer { store.close() }
        let total = 400
        _ = try store.append(
            (0..<total).map { index in
                NewReading(
                    timestamp: ReadingTimestamp(
                        monotonicNanoseconds: UInt64(index) * 1_000_000_000,
                        bootID: "boot-1",
                        wallClockMilliseconds: 1_795_000_000_000 + Int64(index) * 1000,
                        wallClockTrusted: true
                    ),
                    payload: .heartRate(HeartRateReading(bpm: 60 + index % 40, contact: .detected, rrIntervals: [800]))
                )
            }
        )

        let started = ContinuousClock.now
        let failover = FailoverTransport(
            transports: [CurlTransport(baseURL: urlA, timeout: .seconds(5)), CurlTransport(baseURL: urlB, timeout: .seconds(5))],
            now: { ContinuousClock.now - started }
        )
        let acknowledged = Atomic<Int>(0)
        let readingsAcknowledged = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let killAfter = 10
        let engine = SyncEngine(
            store: store,
            transport: failover,
            configuration: SyncConfiguration(
                deviceID: deviceID,
                token: token,
                maxBatchReadings: 10,
                pollInterval: .milliseconds(10),
                sendInterval: .zero,
                backoff: Backoff(initial: .milliseconds(5), maximum: .milliseconds(40), jitter: 1)
            ),
            clock: ContinuousClock(),
            onEvent: { event in
                switch event {
                case .batchAcknowledged(_, let readings, _, _, _):
                    readingsAcknowledged.add(readings, ordering: .relaxed)
                    // Killed from inside the drain, between two batches. Only the signal here:
                    // waiting for the exit would block a thread of the concurrency pool inside the
                    // engine (the whole server suite stalled on it); the test waits after the drain.
                    if acknowledged.add(1, ordering: .relaxed).newValue == killAfter { a.process.signal(SIGKILL) }
                case .sendFailed, .rejected:
                    failures.add(1, ordering: .relaxed)
                default:
                    break
                }
            },
            logger: Logger(label: "quiet"),
            seed: 7
        )
        #expect(failover.currentIndex == 0)
        try await engine.drain(maxFailures: 20)

        await a.kill9()
        #expect(a.process.termination == .signalled(SIGKILL))
        #expect(failover.currentIndex == 1, "the agent should be on B after A died")
        // The death of A cost no failed batch: the same POST went on to B at once.
        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(readingsAcknowledged.load(ordering: .relaxed) == total)
        #expect(acknowledged.load(ordering: .relaxed) > killAfter)
        #expect(try store.allReadings().allSatisfy(\.synced))

        // Exactly once, read from the database through a fresh instance.
        let reader = try await TestServer.start(.postgres, storage: .postgres(url: database))
        let stored = try await reader.server.storedSequences(deviceID: deviceID)
        await reader.stop()
        #expect(stored.count == total, "\(stored.count) readings stored for \(total) sent")
        #expect(Set(stored) == Set(try store.allReadings().map(\.reading.sequence)))
    }
}
#endif
