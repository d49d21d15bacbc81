import Foundation

/// Decides which position fixes are stored and synced (the SOS engine sees every fix anyway).
///
/// - While an alert is open: every fix, at most one per `alertInterval` (1 Hz: the dispatcher
///   follows the wearer).
/// - While moving: every fix, at most one per `movingInterval`.
/// - While stationary: one per `stationaryInterval` (30 s, as a fleet terminal reports).
///
/// "Moving" means gpsd's speed over ground is at least `movingSpeed`, or the fix is at least
/// `movingDisplacement` from the last stored one (catches slow walking and receivers that send no
/// speed; GPS noise at rest stays well under 25 m for a 2D/3D fix). Fixes without a position are
/// never stored. Time is the fixes' monotonic timestamps, never a clock read; a new boot (another
/// boot id) stores the next fix. `tolerance` absorbs receiver jitter, so a 1 Hz receiver whose
/// fixes arrive 990 ms apart still has each one stored at a 1 s interval.
public struct PositionSamplingPolicy: Hashable, Sendable {
    public struct Configuration: Hashable, Sendable {
        public var movingInterval: Duration = .seconds(1)
        public var stationaryInterval: Duration = .seconds(30)
        public var alertInterval: Duration = .seconds(1)
        /// Metres per second at or above which the wearer is moving.
        public var movingSpeed: Double = 1.0
        /// Metres from the last stored fix at or above which the wearer is moving.
        public var movingDisplacement: Double = 25
        public var tolerance: Duration = .milliseconds(50)

        public init() {}
    }

    public var configuration: Configuration
    private var lastStored: (timestamp: ReadingTimestamp, latitude: Double, longitude: Double)?
    /// The next fix with a position is stored whatever the interval (a taxi's state change).
    public private(set) var forced = false

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Stores the next fix with a position regardless of the interval (a taxi's availability
    /// changed: the fleet learns of it with a position at once, not up to 30 s later).
    public mutating func forceNext() { forced = true }

    /// Whether to store `fix`, taken at `timestamp`; records it as the last stored fix if so.
    public mutating func shouldStore(_ fix: PositionFix, at timestamp: ReadingTimestamp, alertOpen: Bool) -> Bool {
        guard fix.hasPosition, let latitude = fix.latitude, let longitude = fix.longitude else { return false }
        let store: Bool
        if forced {
            store = true
            forced = false
        } else if let last = lastStored, let elapsedMs = timestamp.milliseconds(since: last.timestamp) {
            let elapsed = Duration.milliseconds(elapsedMs) + configuration.tolerance
            if alertOpen {
                store = elapsed >= configuration.alertInterval
            } else if isMoving(fix, latitude: latitude, longitude: longitude, last: last) {
                store = elapsed >= configuration.movingInterval
            } else {
                store = elapsed >= configuration.stationaryInterval
            }
        } else {
            store = true
        }
        if store {
            lastStored = (timestamp, latitude, longitude)
        }
        return store
    }

    private func isMoving(
        _ fix: PositionFix,
        latitude: Double,
        longitude: Double,
        last: (timestamp: ReadingTimestamp, latitude: Double, longitude: Double)
    ) -> Bool {
        if let speed = fix.speed, speed >= configuration.movingSpeed { return true }
        let distance = Self.distanceMetres(
            fromLatitude: last.latitude,
            longitude: last.longitude,
            toLatitude: latitude,
            longitude: longitude
        )
        return distance >= configuration.movingDisplacement
    }

    /// Great-circle distance (haversine, mean Earth radius); ample for a 25 m threshold.
    package static func distanceMetres(
        fromLatitude lat1: Double,
        longitude lon1: Double,
        toLatitude lat2: Double,
        longitude lon2: Double
    ) -> Double {
        let radians = Double.pi / 180
        let dLat = (lat2 - lat1) * radians
        let dLon = (lon2 - lon1) * radians
        let a =
            sin(dLat / 2) * sin(dLat / 2)
            + cos(lat1 * radians) * cos(lat2 * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * earthRadiusMetres * asin(min(1, sqrt(a)))
    }

    /// The mean Earth radius (IUGG), for every distance the project computes.
    package static let earthRadiusMetres = 6_371_008.8

    public static func == (lhs: PositionSamplingPolicy, rhs: PositionSamplingPolicy) -> Bool {
        lhs.configuration == rhs.configuration && lhs.forced == rhs.forced && lhs.lastStored?.timestamp == rhs.lastStored?.timestamp
            && lhs.lastStored?.latitude == rhs.lastStored?.latitude
            && lhs.lastStored?.longitude == rhs.lastStored?.longitude
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(configuration)
        hasher.combine(forced)
        hasher.combine(lastStored?.timestamp)
        hasher.combine(lastStored?.latitude)
        hasher.combine(lastStored?.longitude)
    }
}
