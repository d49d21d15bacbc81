import AsyncHTTPClient
import Foundation
import ServerTestSupport
import Synchronization
import TrackMeCore
import TrackMeServer

/// `trackme-sim bench rollup`: the hourly job's roll-up of the group figures (each person's day
/// summed from the counters intake kept for each device's day, `DeviceDay`, and the day's
/// alerts). Three phases, one after the other in the same run:
///
/// - through intake: `devices` wearers send `readingsPerDevice` readings each on one day to a
///   real server on loopback (SQLite, readings sealed under per-person keys) as devices send
///   them (`POST /v1/batches`, a thousand to a batch); the roll-up is the job's own call, timed
///   alone, and must summarise every wearer: the check that intake keeps the counters;
/// - the baseline: the daily job over a seeded population of `baselinePopulation` devices
///   (eight days of counters each, the last seven summarised again as the job does);
/// - the population: the same over `population` devices.
///
/// The ratio says how the job's cost grows with the people: per device-day, population over
/// baseline (1.0: linear).
public enum RollUpBenchmark {
    public struct Phase: Codable, Sendable {
        public var sealed: Bool
        public var readings: Int
        /// Sending the readings (not part of the figure; says how long the setup took).
        public var seedSeconds: Double
        public var rollUpSeconds: Double
        public var microsecondsPerReading: Double

        enum CodingKeys: String, CodingKey {
            case sealed, readings
            case seedSeconds = "seed_s"
            case rollUpSeconds = "rollup_s"
            case microsecondsPerReading = "us_per_reading"
        }
    }

    /// The daily job over a seeded population.
    public struct Population: Codable, Sendable {
        public var devices: Int
        /// Device-days the job summarised (its look-back included).
        public var deviceDays: Int
        public var seedSeconds: Double
        public var rollUpSeconds: Double
        public var microsecondsPerDeviceDay: Double

        enum CodingKeys: String, CodingKey {
            case devices
            case deviceDays = "device_days"
            case seedSeconds = "seed_s"
            case rollUpSeconds = "rollup_s"
            case microsecondsPerDeviceDay = "us_per_device_day"
        }
    }

    public struct Result: Codable, Sendable {
        public var devices: Int
        public var readingsPerDevice: Int
        public var intake: Phase
        public var baseline: Population
        public var population: Population
        /// `population.microsecondsPerDeviceDay / baseline.microsecondsPerDeviceDay`.
        public var ratio: Double

        enum CodingKeys: String, CodingKey {
            case devices, intake, baseline, population, ratio
            case readingsPerDevice = "readings_per_device"
        }
    }

    /// One in `fixEvery` readings is a position fix (the roll-up's cell), the rest heart rate.
    static let fixEvery = 5
    /// Days of counters seeded per device: the job summarises the last `lookBackDays` + 1.
    static let seededDays = 8

    public static func run(devices: Int, readingsPerDevice: Int, baselinePopulation: Int, population: Int) async throws -> Result {
        let intake = try await phase(devices: devices, readingsPerDevice: readingsPerDevice, sealed: true)
        let baseline = try await seeded(devices: baselinePopulation)
        let large = try await seeded(devices: population)
        return Result(
            devices: devices,
            readingsPerDevice: readingsPerDevice,
            intake: intake,
            baseline: baseline,
            population: large,
            ratio: large.microsecondsPerDeviceDay / max(baseline.microsecondsPerDeviceDay, 1e-9)
        )
    }

    /// The daily job over `devices` seeded devices; every one must be summarised.
    static func seeded(devices: Int) async throws -> Population {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let configure: (inout ServerConfiguration) -> Void = { $0.wallClock = { now } }
        return try await InProcessServer.with(configure: configure) { server in
            let clock = ContinuousClock()
            let seeding = try await clock.measure { try await server.server.seedDeviceDayPopulation(devices: devices, days: seededDays) }
            let rollUp = try await clock.measure { try await server.server.rollUpGroupFigures() }
            let summarised = try await server.server.plainGroupAggregate(ageFrom: 0, ageTo: 130, south: 44, west: 8, north: 47.5, east: 11, days: 2)
            guard summarised == devices else {
                throw ExportMemoryBenchmark.Failure("the roll-up summarised \(summarised) of \(devices) devices yesterday")
            }
            let deviceDays = devices * seededDays
            let seconds = seconds(rollUp)
            return Population(
                devices: devices,
                deviceDays: deviceDays,
                seedSeconds: Self.seconds(seeding),
                rollUpSeconds: seconds,
                microsecondsPerDeviceDay: seconds * 1e6 / Double(deviceDays)
            )
        }
    }

    static func phase(devices: Int, readingsPerDevice: Int, sealed: Bool) async throws -> Phase {
        // The readings start at 01:00 of a whole UTC day two days back; the roll-up runs the
        // next day, when that day is over.
        let dayMilliseconds: Int64 = 86_400_000
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let day = (now / dayMilliseconds - 2) * dayMilliseconds
        let first = day + 3_600_000
        let wall = Atomic<Int64>(first - 60_000)
        let keys = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-rollup-keys-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: keys) }
        let master = keys.appendingPathComponent("master.key").path
        if sealed {
            let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            guard FileManager.default.createFile(atPath: master, contents: Data((hex + "\n").utf8), attributes: [.posixPermissions: 0o400]) else {
                throw ExportMemoryBenchmark.Failure("could not write the master key at \(master)")
            }
        }
        let configure: (inout ServerConfiguration) -> Void = {
            $0.adminToken = ExportMemoryBenchmark.admin
            $0.wallClock = { wall.load(ordering: .relaxed) }
            if sealed { $0.personKeys = PersonKeyConfiguration(masterKeyFile: master) }
        }
        return try await InProcessServer.with(configure: configure) { server in
            let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
            do {
                let base = server.baseURL.absoluteString
                let clock = ContinuousClock()
                let seeding = try await clock.measure {
                    for index in 0..<devices {
                        let deviceID = String(format: "pi-%05d", index + 1)
                        // Enrolled before its first reading (readings from before a device's
                        // enrolment are not filed as its own).
                        wall.store(first - 60_000, ordering: .relaxed)
                        let token = try await server.enrol(deviceID, age: 20 + index % 70)
                        try await ExportMemoryBenchmark.fill(
                            http,
                            base: base,
                            token: token,
                            deviceID: deviceID,
                            from: first,
                            count: readingsPerDevice,
                            wall: wall
                        ) { n in
                            n % fixEvery == 0
                                ? .position(
                                    PositionFix(
                                        time: nil,
                                        mode: .threeDimensional,
                                        latitude: 45.0 + Double(index % 20) * 0.1,
                                        longitude: 9.0 + Double(n % 100) * 1e-5
                                    )
                                )
                                : .heartRate(HeartRateReading(bpm: 55 + (n + index) % 60, contact: .detected))
                        }
                    }
                }
                try await http.shutdown()
                wall.store(day + dayMilliseconds + 1_800_000, ordering: .relaxed)
                let rollUp = try await clock.measure { try await server.server.rollUpGroupFigures() }
                // Every wearer summarised, or the figure would time an empty roll-up.
                let summarised = try await server.server.plainGroupAggregate(
                    ageFrom: 0,
                    ageTo: 130,
                    south: 44,
                    west: 8,
                    north: 47.5,
                    east: 10,
                    days: 3
                )
                guard summarised == devices else {
                    throw ExportMemoryBenchmark.Failure("the roll-up summarised \(summarised) of \(devices) wearers")
                }
                let readings = devices * readingsPerDevice
                let seconds = seconds(rollUp)
                return Phase(
                    sealed: sealed,
                    readings: readings,
                    seedSeconds: Self.seconds(seeding),
                    rollUpSeconds: seconds,
                    microsecondsPerReading: seconds * 1e6 / Double(max(readings, 1))
                )
            } catch {
                try? await http.shutdown()
                throw error
            }
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
