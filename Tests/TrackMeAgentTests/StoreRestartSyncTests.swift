import EdgeBenchmarks
import EdgeStore
import EdgeSync
import Foundation
import Logging
import ServerTestSupport
import Testing
import TrackMeCore
import TrackMeServer

/// Issue 16, end to end over real HTTP: the agent's own store and sync engine against the real
/// server (SQLite) on loopback.
@Suite("Store restart and sync", .serialized)
struct StoreRestartSyncTests {
    final class Rig {
        let running: InProcessServer
        let token: String
        var server: TrackMeServer { running.server }
        var port: Int { running.port }

        init() async throws {
            running = try await InProcessServer.start(logLevel: .critical)
            do {
                token = try await running.server.enrolDevice(deviceID: "pi-wipe", person: PersonProfile(name: "Ada", age: 70)).token
            } catch {
                await running.stop()
                throw error
            }
        }

        func engine(_ store: ReadingStore) throws -> SyncEngine {
            SyncEngine(
                store: store,
                transport: CurlTransport(baseURL: try #require(URL(string: "http://127.0.0.1:\(port)"))),
                configuration: SyncConfiguration(deviceID: "pi-wipe", token: token, maxBatchReadings: 64),
                clock: ContinuousClock(),
                logger: quietLogger,
                seed: 7
            )
        }

        func stop() async {
            await running.stop()
        }
    }

    static func readings(_ range: Range<Int>) -> [NewReading] {
        range.map { i in
            let (t, p) = SyntheticReadings.reading(i)
            return NewReading(timestamp: t, payload: p)
        }
    }

    @Test("a wiped store numbering from 1 again: the server refuses with 409, the agent re-bases, every reading arrives once")
    func wipedStore() async throws {
        let directory = try TemporaryDirectory()
        let rig = try await Rig()
        let storePath = directory.file("data/store.sqlite")
        try FileManager.default.createDirectory(atPath: directory.file("data"), withIntermediateDirectories: true)
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: storePath), logger: quietLogger)
            try store.append(Self.readings(0..<200))
            try await rig.engine(store).drain()
            #expect(store.statistics().unsyncedReadings == 0)
            store.close()
        }
        #expect(try await rig.server.storedSequences(deviceID: "pi-wipe").count == 200)
        // `rm -rf /var/lib/trackme`: the store, its WAL and its generation file are gone.
        try FileManager.default.removeItem(atPath: directory.file("data"))
        try FileManager.default.createDirectory(atPath: directory.file("data"), withIntermediateDirectories: true)
        let store = try ReadingStore(configuration: StoreConfiguration(path: storePath), logger: quietLogger)
        let fresh = try store.append(Self.readings(200..<250))
        #expect(fresh.first == 1, "the wiped store numbers from 1 again")
        try await rig.engine(store).drain()
        let stored = try await rig.server.storedSequences(deviceID: "pi-wipe")
        #expect(stored.count == 250, "every acknowledged reading is at the server (on main the 50 new ones were taken for duplicates)")
        #expect(Set(stored).count == stored.count)
        #expect(store.statistics().unsyncedReadings == 0)
        // What the device holds is what the server holds for its numbers.
        let onDevice = try store.allReadings()
        #expect(onDevice.allSatisfy { $0.synced })
        #expect(Set(onDevice.map(\.reading.sequence)).isSubset(of: Set(stored)))
        store.close()
        await rig.stop()
    }

    @Test("while the disk is full the heartbeat still reaches the server, saying what is wrong")
    func heartbeatOnFullDisk() async throws {
        let directory = try TemporaryDirectory()
        let rig = try await Rig()
        let store = try ReadingStore(configuration: StoreConfiguration(path: directory.file("store.sqlite")), logger: quietLogger)
        try store.append(Self.readings(0..<4))
        try store.simulate(.diskFull)
        #expect(throws: StoreError.self) { try store.append(Self.readings(4..<5)) }
        let engine = try rig.engine(store)
        let outcome = await engine.readingsStep(heartbeatDue: true)
        guard case .failed(let error) = outcome else {
            Issue.record("a batch was reserved on a full disk: \(outcome)")
            return
        }
        #expect(error.code == .storeUnavailable)
        let contact = try await rig.server.deviceContact(deviceID: "pi-wipe")
        let heartbeat = try #require(contact.heartbeat, "no heartbeat reached the server while the disk was full")
        #expect(heartbeat.storeProblem == "disk_full")
        #expect(heartbeat.storeDepth == 4)
        #expect(contact.lastSeenMilliseconds != nil)
        await rig.stop()
    }
}
