import EdgeStore
import Foundation
import Logging
import Testing
import TrackMeAgent
import TrackMeCore

/// What a restart restores comes from the journal: a raised alert stays open, one the wearer
/// cancelled (or a dispatcher resolved) does not come back.
@Suite struct AgentPipelineJournalTests {
    static func at(_ seconds: Int64) -> ReadingTimestamp {
        ReadingTimestamp(
            monotonicNanoseconds: UInt64(seconds) * 1_000_000_000,
            bootID: "journal-test",
            wallClockMilliseconds: nil,
            wallClockTrusted: false
        )
    }

    @Test func aCancelledAlertIsNotRestoredButARaisedOneIs() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-journal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let store = try ReadingStore(configuration: StoreConfiguration(path: directory.appendingPathComponent("agent.sqlite").path), logger: logger)
        defer { store.close() }
        let committer = GroupCommitter(store: store, clock: ContinuousClock())
        let pipeline = AgentPipeline(
            configuration: .init(deviceID: "pi-test", profile: PersonProfile(name: "T", age: 50)),
            store: store,
            committer: committer,
            ids: SequentialAlertIDs(prefix: "t"),
            now: Self.at(1),
            dispatch: { _ in },
            logger: logger
        )

        await pipeline.receive(.manualSOS, at: Self.at(10))
        let raised = await pipeline.receive(.tick, at: Self.at(16))
        #expect(raised.contains { if case .raise = $0 { true } else { false } })
        let open = try #require(AgentPipeline.openAlert(in: store, logger: logger))
        #expect(open.id == "t-1")
        #expect(open.state == .raised)

        await pipeline.receive(.delivered(alertID: "t-1"), at: Self.at(17))
        #expect(AgentPipeline.openAlert(in: store, logger: logger)?.state == .delivered)

        await pipeline.receive(.cancel(.iAmSafe), at: Self.at(30))
        #expect(AgentPipeline.openAlert(in: store, logger: logger) == nil)
        // The later states are kept beside the journal, never as updates for the server: the
        // journal holds only what the dispatch lane sends (here the raise, not yet delivered).
        #expect(store.pendingAlertUpdates().map(\.updateSequence) == [0])

        // A second alert, delivered: it is the open one; the first stays closed.
        await pipeline.receive(.manualSOS, at: Self.at(40))
        await pipeline.receive(.tick, at: Self.at(46))
        await pipeline.receive(.delivered(alertID: "t-2"), at: Self.at(47))
        #expect(try store.alertStates().map(\.alert.id) == ["t-1", "t-2"])
        let second = try #require(AgentPipeline.openAlert(in: store, logger: logger))
        #expect(second.id == "t-2")
        #expect(second.state == .delivered)
    }
}
