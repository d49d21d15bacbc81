import Testing

@testable import TrackMeSimulation

/// `bench rollup` in a small version, as CI runs it: both phases roll up every wearer (the
/// benchmark refuses to time an empty roll-up) and report what they did.
@Suite(.timeLimit(.minutes(10)))
struct RollUpBenchmarkTests {
    @Test func bothPhasesSummariseEveryWearer() async throws {
        let result = try await RollUpBenchmark.run(devices: 3, readingsPerDevice: 120)
        #expect(result.clear.sealed == false && result.sealed.sealed == true)
        #expect(result.clear.readings == 360 && result.sealed.readings == 360)
        #expect(result.clear.rollUpSeconds > 0 && result.sealed.rollUpSeconds > 0)
        #expect(result.ratio > 0)
    }
}
