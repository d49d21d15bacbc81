import Testing
import TrackMeAgent
import TrackMeCore

@Suite("Agent state: status and heartbeat from one value")
struct AgentStateTests {
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

    static func state(started: ReadingTimestamp) -> AgentState {
        AgentState(
            deviceID: "pi-1",
            started: started,
            storeBudgetBytes: 1000,
            batteryWarningPercent: 15,
            rulesProfile: PersonProfile(name: "A", age: 40)
        )
    }

    @Test("a fresh board: nothing started, uptime from the start time")
    func fresh() {
        let board = Self.state(started: Self.at(10))
        let status = board.status(now: Self.at(72.5))
        #expect(status.uptimeSeconds == 62.5)
        #expect(status.strap == StrapStatus())
        #expect(status.gpsd == GPSDStatus())
        #expect(status.store == StoreStatus(depth: 0, bytes: 0, budgetBytes: 1000))
        #expect(status.sync == SyncStatus())
        #expect(status.alert == nil)
    }

    @Test("ages are measured from each observation to now")
    func ages() {
        var board = Self.state(started: Self.at(0))
        board.record(strapLink: .connected)
        board.record(heartRate: HeartRateReading(bpm: 71, contact: .detected), at: Self.at(99.2))
        board.gpsd = .fix
        board.record(fix: PositionFix(mode: .threeDimensional, latitude: 1, longitude: 2), at: Self.at(98))
        board.recordSyncSuccess(at: Self.at(70))
        board.store = StoreStatus(depth: 5, bytes: 800, budgetBytes: 1000)
        let status = board.status(now: Self.at(100))
        #expect(status.strap.lastHeartRate == LastHeartRate(bpm: 71, contact: .detected, ageMilliseconds: 800))
        #expect(status.gpsd.fixAgeMilliseconds == 2000)
        #expect(status.gpsd.lastFix?.latitude == 1)
        #expect(status.sync.lastSuccessAgeMilliseconds == 30_000)
        #expect(status.store.depth == 5)
    }

    @Test("observations from before a reboot have no age")
    func otherBoot() {
        var board = Self.state(started: Self.at(0, boot: "boot-2"))
        board.recordSyncSuccess(at: Self.at(500, boot: "boot-1"))
        board.record(heartRate: HeartRateReading(bpm: 60, contact: .detected), at: Self.at(400, boot: "boot-1"))
        let status = board.status(now: Self.at(5, boot: "boot-2"))
        #expect(status.sync.lastSuccessAgeMilliseconds == nil)
        #expect(status.strap.lastHeartRate == nil)
    }

    @Test("a pending alert counts down; a cancelled one leaves the board")
    func alertLifecycle() {
        var board = Self.state(started: Self.at(0))
        board.record(
            openAlert: Self.alert(.pending),
            monitoring: true,
            actions: [.startCountdown(Self.alert(.pending), deadline: Self.at(110))],
            at: .zero
        )
        #expect(board.status(now: Self.at(103)).alert?.countdownRemainingSeconds == 7)
        board.record(openAlert: Self.alert(.raised), monitoring: true, actions: [.raise(Self.alert(.raised))], at: .zero)
        let raised = board.status(now: Self.at(111)).alert
        #expect(raised?.state == .raised)
        #expect(raised?.countdownRemainingSeconds == nil)
        var cancelled = Self.alert(.cancelled)
        cancelled.cancelReason = .falseAlarm
        board.record(openAlert: cancelled, monitoring: true, actions: [.cancelled(cancelled)], at: .zero)
        #expect(board.status(now: Self.at(112)).alert == nil)
    }

    @Test("the heartbeat's strap is searching until the first connection, lost after it, whatever the link tries next")
    func strapInHeartbeat() {
        var state = Self.state(started: Self.at(0))
        #expect(state.heartbeat(now: .zero).strap == "searching")
        state.record(strapLink: .disconnected)
        #expect(state.heartbeat(now: .zero).strap == "searching", "unreachable before it ever connected")
        state.record(strapLink: .connected, address: "AA:BB:CC:DD:EE:FF")
        #expect(state.heartbeat(now: .zero).strap == "connected")
        state.record(strapLink: .disconnected)
        state.record(strapLink: .scanning)
        #expect(state.heartbeat(now: .zero).strap == "lost")
        #expect(state.status(now: Self.at(1)).strap.link == .scanning)
        #expect(state.status(now: Self.at(1)).strap.address == "AA:BB:CC:DD:EE:FF")
    }

    @Test("gpsd's finer state goes in the heartbeat, its connection in the status")
    func gpsdStates() {
        var state = Self.state(started: Self.at(0))
        let expected: [(AgentState.GPSDState, String, GPSDStatus.ConnectionState)] = [
            (.notStarted, "no_device", .notStarted), (.connecting, "no_device", .connecting), (.disconnected, "no_device", .disconnected),
            (.connected, "connected", .connected), (.noDevice, "no_device", .connected), (.noFix, "no_fix", .connected), (.fix, "fix", .connected),
        ]
        for (gpsd, beat, connection) in expected {
            state.gpsd = gpsd
            #expect(state.heartbeat(now: .zero).gpsd == beat, "\(gpsd)")
            #expect(state.status(now: Self.at(1)).gpsd.connection == connection, "\(gpsd)")
        }
    }

    @Test("pausing shows in the status and the heartbeat, and is timed as a condition")
    func paused() {
        var state = Self.state(started: Self.at(0))
        state.record(openAlert: nil, monitoring: false, actions: [.logMonitoringPaused], at: .seconds(10))
        #expect(state.status(now: Self.at(1)).monitoringPaused)
        let beat = state.heartbeat(now: .seconds(70))
        #expect(beat.monitoringPaused == true && beat.conditionSeconds == ["monitoring_paused": 60])
        state.record(openAlert: nil, monitoring: true, actions: [.logMonitoringResumed], at: .seconds(80))
        #expect(state.heartbeat(now: .seconds(90)).conditionSeconds == nil)
    }

    @Test("closing some other alert does not hide the open one")
    func otherAlertClosed() {
        var board = Self.state(started: Self.at(0))
        board.record(openAlert: Self.alert(.raised, id: "A-2"), monitoring: true, actions: [.update(Self.alert(.resolved, id: "A-1"))], at: .zero)
        #expect(board.status(now: Self.at(1)).alert?.id == "A-2")
    }
}
