import Foundation
import GPSDPosition
import GPSDTestSupport
import Logging
import Synchronization
import TrackMeCore

/// Field mode's position source: the NMEA log replayed by gpsd's own `gpsfake` into the real
/// gpsd, read through the agent's own `GPSDReader` (libgps on its thread). The event loop takes
/// the newest fix each trace second, as the pipeline would see it.
final class FieldGPS: Sendable {
    private let gpsfake: GPSFakeProcess
    private let task: Task<Void, Never>
    /// The newest fix and how many arrived, shared with the reading task.
    final class Latest: Sendable {
        let value = Mutex<(fix: PositionFix, serial: Int)?>(nil)
    }

    private let latest = Latest()

    init(log: URL, logger: Logger) throws {
        let gpsfake = try GPSFakeProcess.start(log: log)
        self.gpsfake = gpsfake
        let reader = GPSDReader(host: "127.0.0.1", port: gpsfake.port, logger: logger)
        let latest = self.latest
        task = Task {
            for await event in reader.events() {
                guard case .fix(let fix) = event, fix.hasPosition else { continue }
                latest.value.withLock { $0 = (fix, ($0?.serial ?? 0) + 1) }
            }
        }
    }

    /// The newest fix, if one arrived since `serial`.
    func fix(newerThan serial: Int) -> (fix: PositionFix, serial: Int)? {
        latest.value.withLock { value in
            guard let value, value.serial > serial else { return nil }
            return value
        }
    }

    /// Fixes gpsd delivered so far.
    var fixesReceived: Int { latest.value.withLock { $0?.serial ?? 0 } }

    func stop() {
        task.cancel()
        gpsfake.stop()
    }
}
