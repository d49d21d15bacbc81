import Foundation
import Testing

@testable import TrackMeSimulation

/// `trackme-sim bench intake-under-load` in miniature: every phase runs its quiet half and its
/// loaded half against one server, and each load is under way and says what it did.
@Suite(.timeLimit(.minutes(10))) struct IntakeUnderLoadTests {
    @Test func everyPhaseMeasuresBothHalvesAndItsLoad() async throws {
        var options = IntakeUnderLoadBenchmark.Options()
        options.samples = 5
        options.floodConnections = 2
        options.bcryptCost = 4
        options.downloadReadings = 3_000
        options.devices = 20
        options.batchInterval = 0.5
        options.readingsPerBatch = 2
        options.batchConnections = 4
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-intake-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let result = try await IntakeUnderLoadBenchmark.run(options, directory: directory)

        #expect(result.phases.map(\.beside) == [.signIns, .downloads, .batches])
        for phase in result.phases {
            #expect(phase.quietP99Milliseconds > 0)
            #expect(phase.loadedP99Milliseconds > 0)
            #expect(phase.ratioP99 > 0)
        }
        let signIns = try #require(result.phases.first { $0.beside == .signIns }?.load)
        #expect((signIns.signInAnswers ?? [:]).values.reduce(0, +) >= 2)
        let downloads = try #require(result.phases.first { $0.beside == .downloads }?.load)
        #expect(downloads.historyReadings == 3_000)
        #expect((downloads.downloadsStarted ?? 0) >= 1)
        let batches = try #require(result.phases.first { $0.beside == .batches }?.load)
        #expect(batches.devices == 20)
        #expect((batches.batchesStored ?? 0) >= 1)
    }
}
