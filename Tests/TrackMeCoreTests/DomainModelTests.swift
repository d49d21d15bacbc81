import Testing
import TrackMeCore

@Suite struct DomainModelTests {
    @Test(arguments: [(UInt16(1024), 1000), (UInt16(843), 823), (UInt16(0), 0), (UInt16.max, 63999), (UInt16(512), 500)])
    func rrIntervalsConvertToMilliseconds(raw: UInt16, ms: Int) {
        #expect(HeartRateReading.milliseconds(fromRR: raw) == ms)
    }

    @Test func rrUnitsRoundTripWithinAMillisecond() {
        for ms in stride(from: 250, through: 2500, by: 7) {
            let back = HeartRateReading.milliseconds(fromRR: HeartRateReading.rrUnits(fromMilliseconds: ms))
            #expect(abs(back - ms) <= 1)
        }
    }

    @Test func elapsedTimeOnlyWithinOneBoot() {
        let a = Fixtures.t0
        var b = a
        b.monotonicNanoseconds += 1_500_000_000
        #expect(b.milliseconds(since: a) == 1500)
        b.bootID = "another-boot"
        #expect(b.milliseconds(since: a) == nil)
    }

    @Test func openStates() {
        #expect(AlertState.allCases.filter(\.isOpen) == [.pending, .raised, .delivered, .acknowledged])
    }

    @Test func positionNeedsModeAndCoordinates() {
        #expect(!PositionFix(mode: .none, latitude: 1, longitude: 2).hasPosition)
        #expect(!PositionFix(mode: .threeDimensional, latitude: 1).hasPosition)
        #expect(PositionFix(mode: .twoDimensional, latitude: 1, longitude: 2).hasPosition)
    }

    @Test(arguments: [("pi-0042", true), ("", false), ("a b", false), ("x/y", false), (String(repeating: "a", count: 65), false)])
    func deviceIDs(id: String, valid: Bool) {
        #expect(DeviceIdentity.isValid(id) == valid)
    }
}
