import Foundation
import Synchronization
import Testing
import TrackMeCore

@testable import TrackMeServer

#if PostgreSQL
/// Ingest groups side by side and the feed's advisory lock (issue 22, step 4). A group that
/// took the feed lock for a device back from silence and then waited for another device's row,
/// while the silence job held that row and waited for the feed lock, was a deadlock: PostgreSQL
/// broke it after `deadlock_timeout` (1 s) by failing one side, a batch answered 500 or the
/// silence job failing. Here many silent devices come back at once while the silence job and
/// heartbeats run beside them: nothing may fail, and each device's feed alternates
/// silent / returned.
@Suite("PostgreSQL ingest groups and the feed lock", .serialized)
struct PostgresDeadlockTests {
    @Test("silent devices returning in groups side by side, beside the silence job and heartbeats: no deadlock, no lost event")
    func returningDevices() async throws {
        try await TestServer.with(.postgres) { s in
            let store = s.server.store
            let ingest = s.server.ingestStore
            let devices = 160
            for index in 0..<devices { _ = try await s.enrol("pi-\(index)") }
            let base = TestServer.startWall
            final class Failures: Sendable {
                let list = Mutex<[String]>([])
                func add(_ text: String) { list.withLock { $0.append(text) } }
            }
            let failures = Failures()
            for round in Int64(1)...4 {
                let now = base + round * 100_000
                // Everyone silent (the first round: after a first contact).
                if round == 1 {
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for index in 0..<devices {
                            group.addTask { _ = try await ingest.ingest(GroupCommitTests.batch("pi-\(index)", seq: 1)) }
                        }
                        try await group.waitForAll()
                    }
                }
                _ = try await store.markSilentDevices(lastSeenBefore: now, nowMilliseconds: now)
                // All come back at once, while the silence job runs again and again (it finds the
                // ones already back as silent, their last contact being before `now + 1`) and
                // heartbeats of silent devices arrive.
                await withTaskGroup(of: Void.self) { group in
                    for index in 0..<devices {
                        group.addTask {
                            do {
                                var batch = GroupCommitTests.batch("pi-\(index)", seq: round + 1)
                                batch.receivedMilliseconds = now
                                let result = try await ingest.ingest(batch)
                                if result.stored != 10 { failures.add("pi-\(index) round \(round): stored \(result.stored)") }
                            } catch {
                                failures.add("pi-\(index) round \(round): \(error)")
                            }
                        }
                    }
                    for sweep in 0..<6 {
                        group.addTask {
                            do {
                                _ = try await store.markSilentDevices(lastSeenBefore: now + 1, nowMilliseconds: now + 1)
                            } catch {
                                failures.add("silence job, sweep \(sweep): \(error)")
                            }
                        }
                    }
                    for index in stride(from: 0, to: devices, by: 8) {
                        group.addTask {
                            do {
                                try await ingest.recordHeartbeat(
                                    deviceID: "pi-\(index)",
                                    heartbeatJSON: #"{"gpsd":"fix","store_bytes":0,"store_depth":0,"strap":"connected"}"#,
                                    receivedMilliseconds: now
                                )
                            } catch {
                                failures.add("heartbeat pi-\(index): \(error)")
                            }
                        }
                    }
                }
            }
            let failed = failures.list.withLock { $0 }
            #expect(failed.isEmpty, "\(failed.count) failures, first: \(failed.prefix(3))")

            // Each device's feed alternates silent, returned, silent, ... from a silence.
            let events = try await store.feedEvents(after: 0, limit: 1_000_000)
            var last: [String: String] = [:]
            var returned = 0
            for event in events where event.kind == FeedKind.deviceSilent || event.kind == FeedKind.deviceReturned {
                let data = try #require(try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any])
                let device = try #require(data["device_id"] as? String)
                #expect(last[device] != event.kind, "\(device): \(event.kind) twice in a row")
                if last[device] == nil { #expect(event.kind == FeedKind.deviceSilent, "\(device) returned before going silent") }
                last[device] = event.kind
                if event.kind == FeedKind.deviceReturned { returned += 1 }
            }
            // Every device came back at least once a round.
            #expect(returned >= devices * 4)
        }
    }
}
#endif
