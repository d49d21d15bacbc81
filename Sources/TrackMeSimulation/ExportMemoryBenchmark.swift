import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ServerTestSupport
import Synchronization
import TrackMeCore
import TrackMeServer

/// `trackme-sim bench export-memory`: what a person's CSV download of `days` of 1 Hz heart
/// rate costs the server in resident memory, against the same download of one day measured in
/// the same run (the ratio says whether the cost grows with the history). A real server on
/// loopback (SQLite), the readings sent as the device sends them (`POST /v1/batches`), the
/// download read over HTTP in the chunks it arrives in and thrown away, as a browser saving it
/// to disk would; the process's `VmRSS` sampled every 20 ms while it runs. Client and server
/// share the process, so the rise is an upper bound on the server's.
public enum ExportMemoryBenchmark {
    public struct Download: Codable, Sendable {
        public var days: Int
        public var readings: Int
        public var bytes: Int
        public var seconds: Double
        /// Peak `VmRSS` during the download minus `VmRSS` just before it.
        public var riseMiB: Double
        public var peakMiB: Double

        enum CodingKeys: String, CodingKey {
            case days, readings, bytes, seconds
            case riseMiB = "rise_mib"
            case peakMiB = "peak_mib"
        }
    }

    public struct Result: Codable, Sendable {
        public var baseline: Download
        public var measured: Download
        /// `measured.riseMiB / max(baseline.riseMiB, 1)`: near 1 when the cost does not grow
        /// with the history.
        public var ratio: Double
    }

    static let admin = "bench-export-admin"

    public static func run(days: Int) async throws -> Result {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let first = now - Int64(days) * 86_400_000
        // The server's wall clock walks with the recording, as it did while the device sent it
        // (readings from before a device's enrolment or from the future are not filed as theirs).
        let wall = Atomic<Int64>(first - 60_000)
        let configure: (inout ServerConfiguration) -> Void = {
            $0.adminToken = admin
            $0.wallClock = { wall.load(ordering: .relaxed) }
        }
        return try await InProcessServer.with(configure: configure) { server in
            let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
            do {
                let base = server.baseURL.absoluteString
                let token = try await server.enrol(deviceID)
                let person = try await wearer(http, base: base)
                try await fill(http, base: base, token: token, from: first, count: days * 86_400, wall: wall)
                wall.store(now, ordering: .relaxed)
                let path = base + "/v1/people/\(person)/export?format=csv&to=\(now)&from="
                let baseline = try await download(http, path + "\(now - 86_400_000)", days: 1, readings: 86_400)
                let measured = try await download(http, path + "\(first)", days: days, readings: days * 86_400)
                try await http.shutdown()
                return Result(baseline: baseline, measured: measured, ratio: measured.riseMiB / max(baseline.riseMiB, 1))
            } catch {
                try? await http.shutdown()
                throw error
            }
        }
    }

    /// The device whose readings `fill` sends unless told another.
    static let deviceID = "pi-export"

    /// A wearer's account with `deviceID` linked to it (the admin creates both, as an operator
    /// would); the account's id. The device must be enrolled first.
    static func wearer(_ http: HTTPClient, base: String) async throws -> String {
        let created = try await call(
            http,
            .POST,
            base + "/v1/accounts",
            json: ["username": "wearer", "password": "correct horse battery", "role": "wearer"]
        )
        guard let person = created["id"] as? String else { throw Failure("account not created: \(created)") }
        _ = try await call(http, .POST, base + "/v1/people/\(person)/devices", json: ["device_id": deviceID])
        return person
    }

    /// One reading a second from `from`, a thousand to a batch, as the device's readings lane
    /// sends them: heart rate, or the reading `payload` makes of the reading's number.
    static func fill(
        _ http: HTTPClient,
        base: String,
        token: String,
        deviceID: String = ExportMemoryBenchmark.deviceID,
        from: Int64,
        count: Int,
        wall: borrowing Atomic<Int64>,
        payload: (Int) -> WireReading.Payload = { .heartRate(HeartRateReading(bpm: 55 + $0 % 50, contact: .detected)) }
    ) async throws {
        let perBatch = 1_000
        var batchSequence: Int64 = 0
        for start in stride(from: 0, to: count, by: perBatch) {
            batchSequence += 1
            let readings = (start..<min(start + perBatch, count)).map { n in
                WireReading(
                    sequence: Int64(n + 1),
                    timestamp: ReadingTimestamp(
                        monotonicNanoseconds: UInt64(n) * 1_000_000_000,
                        bootID: "bench-boot",
                        wallClockMilliseconds: from + Int64(n) * 1000,
                        wallClockTrusted: true
                    ),
                    payload: payload(n)
                )
            }
            wall.store(from + Int64(min(start + perBatch, count)) * 1000, ordering: .relaxed)
            let batch = SyncBatch(deviceID: deviceID, batchSequence: batchSequence, readings: readings)
            var request = HTTPClientRequest(url: base + "/v1/batches")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "Idempotency-Key", value: batch.idempotencyKey)
            request.body = .bytes(ByteBuffer(bytes: try WireCodec.encode(batch)))
            let response = try await http.execute(request, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 1 << 20)
            guard response.status == .ok else { throw Failure("batch \(batchSequence): \(response.status) \(String(buffer: body))") }
        }
    }

    static func download(_ http: HTTPClient, _ url: String, days: Int, readings: Int) async throws -> Download {
        let before = residentMiB()
        let peak = Mutex(before)
        let sampling = Atomic<Bool>(true)
        let sampler = Task {
            while sampling.load(ordering: .relaxed) {
                let now = residentMiB()
                peak.withLock { $0 = max($0, now) }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        let started = ContinuousClock.now
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Authorization", value: "Bearer \(admin)")
        let response = try await http.execute(request, timeout: .seconds(3600))
        guard response.status == .ok else { throw Failure("download: \(response.status)") }
        var bytes = 0
        for try await chunk in response.body { bytes += chunk.readableBytes }
        let elapsed = ContinuousClock.now - started
        sampling.store(false, ordering: .relaxed)
        await sampler.value
        let top = peak.withLock { $0 }
        return Download(
            days: days,
            readings: readings,
            bytes: bytes,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            riseMiB: top - before,
            peakMiB: top
        )
    }

    static func call(_ http: HTTPClient, _ method: HTTPMethod, _ url: String, json: [String: Any]) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(admin)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: json)))
        let response = try await http.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard (200..<300).contains(response.status.code) else { throw Failure("\(method) \(url): \(response.status) \(String(buffer: body))") }
        return (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]) ?? [:]
    }

    /// This process's resident set (`VmRSS` in `/proc/self/status`), MiB.
    static func residentMiB() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kib = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return 0 }
        return kib / 1024
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
