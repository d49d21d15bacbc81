import Foundation
import Logging
import Testing
import TrackMeAgent
import TrackMeCore

/// A directory of the test's own under /tmp (short, so socket paths fit in 107 bytes),
/// removed when the test ends.
struct TemporaryDirectory: ~Copyable {
    let path: String

    init() throws {
        path = "/tmp/tma-" + UUID().uuidString.prefix(8).lowercased()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// The package root, to find `hardware/` files.
enum Repository {
    static var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    static func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }
}

/// An executable of this package (`trackme-agent`, `trackme-server`): they sit beside the test
/// bundle in the build directory.
func builtProduct(_ name: String) throws -> String {
    let me = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let candidate = URL(fileURLWithPath: me).deletingLastPathComponent().appendingPathComponent(name).path
    try #require(
        FileManager.default.isExecutableFile(atPath: candidate),
        "\(name) is not built beside the tests (\(candidate)): run swift build --build-tests"
    )
    return candidate
}

/// An `AgentControl` that answers from fixed values and records what it was asked.
actor FakeControl: AgentControl {
    var statusValue: AgentStatus
    var openAlert: AlertStatus?
    private(set) var calls: [String] = []
    private(set) var paused = false

    init(status: AgentStatus = FakeControl.sampleStatus, openAlert: AlertStatus? = nil) {
        self.statusValue = status
        self.openAlert = openAlert
    }

    func status() -> AgentStatus {
        calls.append("status")
        var status = statusValue
        status.monitoringPaused = paused
        status.alert = openAlert
        return status
    }

    func triggerSOS(discreet: Bool) -> AlertStatus {
        calls.append(discreet ? "sos:discreet" : "sos")
        let alert = openAlert ?? AlertStatus(id: "A-1", kind: .manual, state: .pending, countdownRemainingSeconds: 10)
        openAlert = alert
        return alert
    }

    func markSafe(reason: CancelReason) throws -> AlertStatus {
        calls.append("safe:\(reason.rawValue)")
        guard var alert = openAlert else {
            throw AgentControlError(code: .noOpenAlert, message: "no alert is open")
        }
        alert.state = .cancelled
        alert.cancelReason = reason
        alert.countdownRemainingSeconds = nil
        openAlert = nil
        return alert
    }

    func pauseMonitoring() -> MonitoringState {
        calls.append("pause")
        paused = true
        return MonitoringState(paused: true)
    }

    func resumeMonitoring() -> MonitoringState {
        calls.append("resume")
        paused = false
        return MonitoringState(paused: false)
    }

    static let sampleStatus = AgentStatus(
        deviceID: "pi-0042",
        uptimeSeconds: 3725,
        strap: StrapStatus(
            link: .connected,
            address: "A0:9E:1A:12:34:56",
            batteryPercent: 80,
            lastHeartRate: LastHeartRate(bpm: 72, contact: .detected, ageMilliseconds: 850)
        ),
        gpsd: GPSDStatus(
            connection: .connected,
            lastFix: PositionFix(mode: .threeDimensional, latitude: 45.478, longitude: 9.2275, horizontalError: 4.2),
            fixAgeMilliseconds: 1200
        ),
        store: StoreStatus(depth: 42, bytes: 81920, budgetBytes: 10_000_000),
        sync: SyncStatus(lastSuccessAgeMilliseconds: 4000)
    )
}

/// A logger that drops everything (tests assert behaviour, not log lines).
let quietLogger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

/// How long a test's control client waits for the agent's answer. The tests assert that an
/// answer comes and what it says, not how fast: with the suite's other tests and other work on
/// the machine, a status answer has taken more than the CLI's 10 s.
let controlAnswerTime: Duration = .seconds(120)
