import Foundation
import Testing
import TrackMeCore

@testable import TrackMeAgent

/// Issue 21: the runner and taxi profiles through the daemon's own composition root.
@Suite("device profiles", .serialized)
struct ProfileTests {
    @Test("profile and run from the file; a wrong profile or code is named with its line")
    func configuration() throws {
        let c = try ConfigurationLoader.parse(
            yaml: ConfigurationTests.minimal + "\nprofile: runner\nrun: {code: CITY-10K, show_to_spectators: true}\n"
        )
        #expect(c.profile == .runner)
        #expect(c.run == RunConfiguration(code: "CITY-10K", showToSpectators: true))
        #expect(try ConfigurationLoader.parse(yaml: ConfigurationTests.minimal).profile == .wearer)
        let bad = try #require(throws: ConfigurationError.self) {
            try ConfigurationLoader.parse(yaml: ConfigurationTests.minimal + "\nprofile: bus\nrun: {code: x}\n")
        }
        #expect(bad.issues.contains { $0.keyPath == "profile" && $0.message.contains("wearer, runner, taxi") && $0.line != nil })
        #expect(bad.issues.contains { $0.keyPath == "run.code" })
    }

    @Test("taxi: commands change the state the heartbeat carries; ride-start at once; status shows it; a wearer refuses")
    func taxi() async throws {
        let directory = try TemporaryDirectory()
        let parts = try AgentAssembly.make(
            configuration: try WearerDeviceTests.configuration(directory, extra: "profile: taxi"),
            logger: quietLogger
        )
        #expect(parts.state.heartbeat().profile == .taxi)
        #expect(parts.state.heartbeat().taxiState == .unavailable)
        #expect(try await parts.control.taxi(.available).taxi == .available)
        #expect(parts.state.heartbeat().taxiState == .available)
        #expect(try await parts.control.taxi(.rideStart).taxi == .onRide)
        #expect(parts.state.heartbeat().taxiState == .onRide)
        await #expect(throws: AgentControlError.self) { try await parts.control.taxi(.available) }
        let status = await parts.control.status()
        #expect(status.profile == ProfileState(profile: .taxi, taxi: .onRide))
        #expect(StatusReport.render(status).contains("state on_ride"))
        #expect(parts.control.pipeline.configuration.settings.heartRateHigh.enabled == false)
        #expect(parts.control.pipeline.configuration.positionSampling.configuration.movingInterval == .seconds(30))

        let wearerDirectory = try TemporaryDirectory()
        let wearer = try AgentAssembly.make(configuration: try WearerDeviceTests.configuration(wearerDirectory), logger: quietLogger)
        await #expect(throws: AgentControlError.self) { try await wearer.control.taxi(.available) }
        #expect(wearer.state.heartbeat().taxiState == nil)
    }

    @Test("runner: joins by code over the control socket's protocol, checks in; the heartbeat carries both")
    func runner() async throws {
        let directory = try TemporaryDirectory()
        let parts = try AgentAssembly.make(
            configuration: try WearerDeviceTests.configuration(directory, extra: "profile: runner"),
            logger: quietLogger
        )
        #expect(parts.state.heartbeat().run == nil)
        await #expect(throws: AgentControlError.self) { try await parts.control.checkInToRun() }
        let request = try ControlCodec.decode(ControlRequest.self, from: Array(#"{"command":"run_join","code":"CITY-10K","show":true}"#.utf8))
        #expect(request == .runJoin(code: "CITY-10K", show: true))
        _ = try await parts.control.joinRun(code: "CITY-10K", show: true)
        #expect(parts.state.heartbeat().run == RunParticipation(code: "CITY-10K", showToSpectators: true))
        let checked = try await parts.control.checkInToRun()
        #expect(checked.run?.checkedInMilliseconds != nil)
        #expect(parts.state.heartbeat().run?.checkedInMilliseconds == checked.run?.checkedInMilliseconds)
        #expect(StatusReport.render(await parts.control.status()).contains("run CITY-10K, shown to spectators, checked in"))
        #expect(parts.control.pipeline.configuration.positionSampling.configuration.stationaryInterval == .seconds(1))
        // Health shared with the organiser only when the runner says so, over the socket too.
        #expect(parts.state.heartbeat().run?.shareHealth == false)
        let sharing = try ControlCodec.decode(
            ControlRequest.self,
            from: Array(#"{"command":"run_join","code":"CITY-10K","show":false,"health":true}"#.utf8)
        )
        #expect(sharing == .runJoin(code: "CITY-10K", show: false, shareHealth: true))
        _ = try await parts.control.joinRun(code: "CITY-10K", show: false, shareHealth: true)
        #expect(parts.state.heartbeat().run == RunParticipation(code: "CITY-10K", showToSpectators: false, shareHealth: true))
        #expect(StatusReport.render(await parts.control.status()).contains("heart rate shared with the organiser"))
    }
}
