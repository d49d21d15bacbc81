import Testing
import TrackMeAgent
import TrackMeCore

@Suite("Status board")
struct StatusBoardTests {
    static func at(_ seconds: Double, boot: String = "boot-1") -> ReadingTimestamp {
        ReadingTimestamp(
            monotonicNanoseconds: UInt64(seconds * 1e9),
            bootID: boot,
            wallClockMilliseconds: nil,
            wallClockTrusted: false
        )
    }

    static func alert(_ state: AlertState, id: String = "A-1") -> AlertRecord {
        AlertRecord(id: id, deviceID: "pi-1", kind: .manual, state: state, firstCritical: at(100))
    }

    @Test("a fresh board: nothing started, uptime from the start time")
    func fresh() {
        let board = StatusBoard(deviceID: "pi-1", started: Self.at(10), storeBudgetBytes: 1000)
        let status = board.snapshot(now: Self.at(72.5))
        #expect(status.uptimeSeconds == 62.5)
        #expect(status.strap == StrapStatus())
        #expect(status.gpsd == GPSDStatus())
        #expect(status.store == StoreStatus(depth: 0, bytes: 0, budgetBytes: 1000))
        #expect(status.sync == SyncStatus())
        #expect(status.alert == nil)
    }

    @Test("ages are measured from each observation to now")
    func ages() {
        var board = StatusBoard(deviceID: "pi-1", started: Self.at(0), storeBudgetBytes: 1000)
        board.strapLink = .connected
        board.record(heartRate: HeartRateReading(bpm: 71, contact: .detected), at: Self.at(99.2))
        board.gpsdConnection = .connected
        board.record(fix: PositionFix(mode: .threeDimensional, latitude: 1, longitude: 2), at: Self.at(98))
        board.recordSyncSuccess(at: Self.at(70))
        board.store = StoreStatus(depth: 5, bytes: 800, budgetBytes: 1000)
        let status = board.snapshot(now: Self.at(100))
        #expect(status.strap.lastHeartRate == LastHeartRate(bpm: 71, contact: .detected, ageMilliseconds: 800))
        #expect(status.gpsd.fixAgeMilliseconds == 2000)
        #expect(status.gpsd.lastFix?.latitude == 1)
        #expect(status.sync.lastSuccessAgeMilliseconds == 30_000)
        #expect(status.store.depth == 5)
    }

    @Test("observations from before a reboot have no age")
    func otherBoot() {
        var board = StatusBoard(deviceID: "pi-1", started: Self.at(0, boot: "boot-2"), storeBudgetBytes: 1000)
        board.recordSyncSuccess(at: Self.at(500, boot: "boot-1"))
        board.record(heartRate: HeartRateReading(bpm: 60, contact: .detected), at: Self.at(400, boot: "boot-1"))
        let status = board.snapshot(now: Self.at(5, boot: "boot-2"))
        #expect(status.sync.lastSuccessAgeMilliseconds == nil)
        #expect(status.strap.lastHeartRate == nil)
    }

    @Test("a pending alert counts down; a cancelled one leaves the board")
    func alertLifecycle() {
        var board = StatusBoard(deviceID: "pi-1", started: Self.at(0), storeBudgetBytes: 1000)
        board.record(alert: Self.alert(.pending), countdownDeadline: Self.at(110))
        #expect(board.snapshot(now: Self.at(103)).alert?.countdownRemainingSeconds == 7)
        board.record(alert: Self.alert(.raised))
        let raised = board.snapshot(now: Self.at(111)).alert
        #expect(raised?.state == .raised)
        #expect(raised?.countdownRemainingSeconds == nil)
        var cancelled = Self.alert(.cancelled)
        cancelled.cancelReason = .falseAlarm
        board.record(alert: cancelled)
        #expect(board.snapshot(now: Self.at(112)).alert == nil)
    }

    @Test("closing some other alert does not hide the open one")
    func otherAlertClosed() {
        var board = StatusBoard(deviceID: "pi-1", started: Self.at(0), storeBudgetBytes: 1000)
        board.record(alert: Self.alert(.raised, id: "A-2"))
        board.record(alert: Self.alert(.resolved, id: "A-1"))
        #expect(board.snapshot(now: Self.at(1)).alert?.id == "A-2")
    }
}
