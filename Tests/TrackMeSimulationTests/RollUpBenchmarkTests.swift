import Testing

@testable import TrackMeSimulation

/// `bench rollup` in a small version, as CI runs it: every phase rolls up every wearer or device
/// (the benchmark refuses to time an empty roll-up) and reports what it did.
@Suite(.timeLimit(.minutes(10)))
struct RollUpBenchmarkTests {
    @Test func everyPhaseSummarisesEveryone() async throws {
        let result = try await RollUpBenchmark.run(devices: 3, readingsPerDevice: 120, baselinePopulation: 20, population: 200)
        #expect(result.intake.sealed && result.intake.readings == 360)
        #expect(result.baseline.devices == 20 && result.baseline.deviceDays == 20 * RollUpBenchmark.seededDays)
        #expect(result.population.devices == 200 && result.population.deviceDays == 200 * RollUpBenchmark.seededDays)
        #expect(result.intake.rollUpSeconds > 0 && result.population.rollUpSeconds > 0)
        #expect(result.ratio > 0)
    }
}
