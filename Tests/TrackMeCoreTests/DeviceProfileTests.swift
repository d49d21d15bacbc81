import Foundation
import Testing
import TrackMeCore

@Suite("Device profiles: sampling, rules, taxi state, wire fields")
struct DeviceProfileTests {
    static func stored(_ profile: DeviceProfile, count: Int, stepMs: Int, speed: Double, force: Set<Int> = []) -> [Int] {
        var policy = PositionSamplingPolicy(configuration: profile.sampling)
        return (0..<count).compactMap { i in
            if force.contains(i) { policy.forceNext() }
            let fix = PositionFix(mode: .threeDimensional, latitude: 45.0, longitude: 7.0, speed: speed)
            return policy.shouldStore(fix, at: PositionSamplingPolicyTests.at(i * stepMs), alertOpen: false) ? i * stepMs : nil
        }
    }

    @Test("runner: every fix at 1 Hz, standing still or not")
    func runnerSampling() {
        #expect(Self.stored(.runner, count: 10, stepMs: 1_000, speed: 0) == Array(stride(from: 0, to: 10_000, by: 1_000)))
        #expect(Self.stored(.runner, count: 10, stepMs: 1_000, speed: 4) == Array(stride(from: 0, to: 10_000, by: 1_000)))
        // The wearer standing still: every 30 s.
        #expect(Self.stored(.wearer, count: 10, stepMs: 1_000, speed: 0) == [0])
    }

    @Test("taxi: every 30 s while driving, and at once on a state change")
    func taxiSampling() {
        #expect(Self.stored(.taxi, count: 91, stepMs: 1_000, speed: 12) == [0, 30_000, 60_000, 90_000])
        #expect(Self.stored(.taxi, count: 61, stepMs: 1_000, speed: 12, force: [7]) == [0, 7_000, 37_000])
    }

    @Test("rules: a taxi has manual SOS only; a runner's high limit allows racing")
    func rules() {
        let person = PersonProfile(name: "Ann", age: 40)
        let (taxi, _) = DeviceProfile.taxi.applied(to: SOSSettings(), profile: person)
        #expect(taxi.manual.enabled)
        #expect(!taxi.heartRateLow.enabled && !taxi.heartRateHigh.enabled && !taxi.noPulse.enabled)
        #expect(!taxi.contactLost.enabled && !taxi.strapSilent.enabled)
        let (runner, runnerPerson) = DeviceProfile.runner.applied(to: SOSSettings(), profile: person)
        let predicted = HeartRateLimits(profile: person).maximum
        #expect(HeartRateLimits(profile: runnerPerson).maximum == predicted + DeviceProfile.runnerHighMargin)
        #expect(runner.heartRateHigh.enabled && runner.heartRateLow.enabled && runner.noPulse.enabled)
        #expect(runner.heartRateHigh.persistence >= .seconds(60))
        // An explicit limit in the profile is the person's own and stays.
        var explicit = person
        explicit.maximumHeartRate = 170
        #expect(DeviceProfile.runner.applied(to: SOSSettings(), profile: explicit).profile.maximumHeartRate == 170)
        let (wearer, wearerPerson) = DeviceProfile.wearer.applied(to: SOSSettings(), profile: person)
        #expect(wearer == SOSSettings() && wearerPerson == person)
    }

    @Test("taxi state: ride-start from any state, ride-end only from a ride, toggle for the button")
    func taxiStates() throws {
        var machine = TaxiStateMachine()
        #expect(machine.state == .unavailable)
        #expect(try machine.receive(.available))
        #expect(try !machine.receive(.available))
        #expect(try machine.receive(.rideStart))
        #expect(machine.state == .onRide)
        #expect(throws: TaxiStateMachine.Refusal.self) { try machine.receive(.available) }
        #expect(try !machine.receive(.toggle))
        #expect(try machine.receive(.rideEnd))
        #expect(machine.state == .available)
        #expect(throws: TaxiStateMachine.Refusal.self) { try machine.receive(.rideEnd) }
        #expect(try machine.receive(.toggle))
        #expect(machine.state == .unavailable)
        #expect(try machine.receive(.rideStart))
    }

    @Test("wire: the heartbeat carries profile, taxi state and run; an old agent's heartbeat still decodes")
    func wire() throws {
        var beat = DeviceHeartbeat(strap: "searching", gpsd: "fix", storeDepth: 0, storeBytes: 0)
        beat.profile = .taxi
        beat.taxiState = .onRide
        beat.run = RunParticipation(code: "CITY-10K", showToSpectators: true, checkedInMilliseconds: 5)
        let text = String(decoding: try WireCodec.encode(beat), as: UTF8.self)
        #expect(text.contains("\"taxi_state\":\"on_ride\""))
        #expect(text.contains("\"run\":{\"checked_in_ms\":5,\"code\":\"CITY-10K\",\"health\":false,\"show\":true}"))
        #expect(try WireCodec.decode(DeviceHeartbeat.self, from: Data(text.utf8)) == beat)
        let old = try WireCodec.decode(
            DeviceHeartbeat.self,
            from: Data(#"{"strap":"connected","gpsd":"fix","store_depth":0,"store_bytes":0}"#.utf8)
        )
        #expect(old.profile == nil && old.taxiState == nil && old.run == nil)
        #expect(throws: (any Error).self) {
            try WireCodec.decode(
                DeviceHeartbeat.self,
                from: Data(#"{"strap":"c","gpsd":"f","store_depth":0,"store_bytes":0,"taxi_state":"flying"}"#.utf8)
            )
        }
        #expect(RunParticipation.isValidCode("CITY-10K"))
        #expect(!RunParticipation.isValidCode("abc"))
        #expect(!RunParticipation.isValidCode("city-10k"))
    }
}
