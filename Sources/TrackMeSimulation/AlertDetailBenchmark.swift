// Data path, step 6 (simulation): what the dispatcher's console costs the server per alert.

import AsyncHTTPClient
public import Foundation
import Logging
import NIOCore
import NIOHTTP1
import TrackMeCore
import TrackMeServer

/// `trackme-sim bench alert-to-console --detail`: the request every open console makes for an
/// open alert on each of its updates (`GET /v1/alerts/{id}`), against a real `TrackMeServer` on
/// loopback (SQLite) holding `devices` enrolled devices and `openAlerts` open alerts, each with
/// `ageMinutes` of 1 Hz position updates. The baseline, in the same run against the same server
/// and client, is `GET /health`. The detail's cost should not move with the fleet's size or the
/// alerts' age.
public enum AlertDetailBenchmark {
    public struct Result: Codable, Sendable {
        public var devices: Int
        public var openAlerts: Int
        public var ageMinutes: Int
        public var samples: Int
        public var p50Milliseconds: Double
        public var p99Milliseconds: Double
        public var baselineP50Milliseconds: Double
        public var baselineP99Milliseconds: Double
        public var ratioP50: Double
        public var ratioP99: Double
        public var seedSeconds: Double

        enum CodingKeys: String, CodingKey {
            case devices
            case openAlerts = "open_alerts"
            case ageMinutes = "age_minutes"
            case samples
            case p50Milliseconds = "p50_ms"
            case p99Milliseconds = "p99_ms"
            case baselineP50Milliseconds = "baseline_p50_ms"
            case baselineP99Milliseconds = "baseline_p99_ms"
            case ratioP50 = "ratio_p50"
            case ratioP99 = "ratio_p99"
            case seedSeconds = "seed_s"
        }
    }

    public static func run(devices: Int, openAlerts: Int, ageMinutes: Int, samples: Int, directory: URL) async throws -> Result {
        guard devices >= openAlerts, openAlerts > 0, ageMinutes >= 0, samples > 0 else {
            throw ScenarioError(message: "need devices >= open alerts > 0, age >= 0 and samples > 0")
        }
        let logger = Logger(label: "trackme.bench.detail", factory: { _ in SwiftLogNoOpLogHandler() })
        let server = try await TrackMeServer(
            configuration: ServerConfiguration(
                host: "127.0.0.1",
                port: 0,
                storage: .sqlite(path: directory.appendingPathComponent("server.sqlite").path),
                // Seeding 100,000 devices or 6 hours of updates is one commit each: without an fsync
                // per commit it takes minutes, not an hour. The detail request only reads.
                durability: .processCrash,
                // 200 consoles' worth of requests from one address and token, back to back.
                limits: .withoutRateLimits
            ),
            logger: logger
        )
        let serverTask = Task { try await server.run() }
        defer { serverTask.cancel() }
        let port = try await server.boundPort()

        let seedStart = ContinuousClock.now
        for index in 0..<devices {
            _ = try await server.enrolDevice(deviceID: String(format: "dev-%06d", index), person: PersonProfile(name: "Person \(index)", age: 70))
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let opened = now - Int64(ageMinutes) * 60_000
        let stamp = ReadingTimestamp(monotonicNanoseconds: 1, bootID: "bench", wallClockMilliseconds: opened, wallClockTrusted: true)
        var alertIDs: [String] = []
        for index in 0..<openAlerts {
            let deviceID = String(format: "dev-%06d", index * (devices / openAlerts))
            let alertID = "open-\(index)"
            alertIDs.append(alertID)
            var record = AlertRecord(
                id: alertID,
                deviceID: deviceID,
                kind: .noPulse,
                state: .raised,
                firstCritical: stamp,
                raised: stamp,
                position: AlertPosition(fix: PositionFix(mode: .threeDimensional, latitude: 45.46, longitude: 9.19), ageMilliseconds: 800)
            )
            try await server.recordAlertUpdateDirectly(
                AlertUpdate(alert: record, updateSequence: 0, type: .raised, sent: stamp),
                receivedMilliseconds: opened
            )
            for second in 0..<(ageMinutes * 60) {
                record.position?.fix.latitude = 45.46 + Double(second) * 0.00001
                try await server.recordAlertUpdateDirectly(
                    AlertUpdate(alert: record, updateSequence: second + 1, type: .position, sent: stamp),
                    receivedMilliseconds: opened + Int64(second + 1) * 1000
                )
            }
        }
        let seedSeconds = ScenarioRunner.milliseconds(ContinuousClock.now - seedStart) / 1000
        let dispatcher = try await server.createDispatcher(name: "bench")

        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        do {
            var latencies: [Double] = []
            var baseline: [Double] = []
            for sample in 0..<samples {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/alerts/\(alertIDs[sample % alertIDs.count])")
                request.headers.add(name: "Authorization", value: "Bearer \(dispatcher.token)")
                let start = ContinuousClock.now
                let response = try await client.execute(request, timeout: .seconds(30))
                _ = try await response.body.collect(upTo: 1 << 24)
                guard response.status == .ok else { throw ScenarioError(message: "detail answered \(response.status.code)") }
                latencies.append(ScenarioRunner.milliseconds(ContinuousClock.now - start))
                let healthStart = ContinuousClock.now
                let health = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/health"), timeout: .seconds(10))
                _ = try await health.body.collect(upTo: 1 << 16)
                baseline.append(ScenarioRunner.milliseconds(ContinuousClock.now - healthStart))
            }
            try await client.shutdown()
            func percentile(_ values: [Double], _ p: Double) -> Double {
                let sorted = values.sorted()
                guard !sorted.isEmpty else { return 0 }
                return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
            }
            let p50 = percentile(latencies, 0.5)
            let p99 = percentile(latencies, 0.99)
            let base50 = percentile(baseline, 0.5)
            let base99 = percentile(baseline, 0.99)
            return Result(
                devices: devices,
                openAlerts: openAlerts,
                ageMinutes: ageMinutes,
                samples: samples,
                p50Milliseconds: p50,
                p99Milliseconds: p99,
                baselineP50Milliseconds: base50,
                baselineP99Milliseconds: base99,
                ratioP50: base50 > 0 ? p50 / base50 : 0,
                ratioP99: base99 > 0 ? p99 / base99 : 0,
                seedSeconds: seedSeconds
            )
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}
