// Data path, step 6 (simulation): the agent's own pipeline and lanes driven over recorded traces on a virtual clock, with faults.

import AsyncHTTPClient
import BlueZHeartRate
import EdgeDispatch
import EdgeStore
import EdgeSync
public import Foundation
import Logging
import NIOCore
import NIOHTTP1
import TrackMeAgent
import TrackMeCore
import TrackMeServer

/// `trackme-sim bench alert-to-console`: from the bytes of the reading that raises an alert
/// (the flat line's third zero completes `no_pulse`, whose countdown is 0) through the agent's
/// `AgentPipeline`, journal, `DispatchLane` and real HTTP (`HTTPAlertTransport` over
/// `CurlTransport`, as the agent sends) to the `alert` event arriving at a dispatcher's SSE
/// client of a real `TrackMeServer` on loopback (SQLite). The baseline, in the same run against
/// the same server, is one `GET /health` round trip from the same client: the ratio says what the
/// whole alert path costs over the cheapest request the server answers.
///
/// Each alert is cancelled (and the cancellation delivered) before the next one starts.
public enum AlertToConsoleBenchmark {
    public struct Result: Codable, Sendable {
        public var samples: Int
        public var p50Milliseconds: Double
        public var p99Milliseconds: Double
        public var maxMilliseconds: Double
        public var baselineP50Milliseconds: Double
        public var baselineP99Milliseconds: Double
        /// p50 / baseline p50 and p99 / baseline p99.
        public var ratioP50: Double
        public var ratioP99: Double
        public var baseline: String

        enum CodingKeys: String, CodingKey {
            case samples
            case p50Milliseconds = "p50_ms"
            case p99Milliseconds = "p99_ms"
            case maxMilliseconds = "max_ms"
            case baselineP50Milliseconds = "baseline_p50_ms"
            case baselineP99Milliseconds = "baseline_p99_ms"
            case ratioP50 = "ratio_p50"
            case ratioP99 = "ratio_p99"
            case baseline
        }
    }

    public static func run(samples: Int, directory: URL) async throws -> Result {
        let logger = Logger(label: "trackme.bench.console", factory: { _ in SwiftLogNoOpLogHandler() })
        let server = try await TrackMeServer(
            configuration: ServerConfiguration(
                host: "127.0.0.1",
                port: 0,
                storage: .sqlite(path: directory.appendingPathComponent("server.sqlite").path)
            ),
            logger: logger
        )
        let serverTask = Task { try await server.run() }
        defer { serverTask.cancel() }
        let port = try await server.boundPort()
        guard let base = URL(string: "http://127.0.0.1:\(port)") else { throw ScenarioError(message: "no loopback URL") }
        let profile = PersonProfile(name: "Bench", age: 70)
        let device = try await server.enrolDevice(deviceID: "bench", person: profile)
        let dispatcher = try await server.createDispatcher(name: "bench")

        // The dispatcher: one SSE connection for the whole run, as a console keeps it.
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        do {
            let result = try await measure(
                samples: samples,
                directory: directory,
                base: base,
                client: client,
                deviceToken: device.token,
                dispatcherToken: dispatcher.token,
                profile: profile,
                logger: logger
            )
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func measure(
        samples: Int,
        directory: URL,
        base: URL,
        client: HTTPClient,
        deviceToken: String,
        dispatcherToken: String,
        profile: PersonProfile,
        logger: Logger
    ) async throws -> Result {
        var streamRequest = HTTPClientRequest(url: base.absoluteString + "/v1/alerts/stream")
        streamRequest.headers.add(name: "Authorization", value: "Bearer \(dispatcherToken)")
        let stream = try await client.execute(streamRequest, timeout: .hours(24))
        var feed = SSEReader(body: stream.body.makeAsyncIterator())

        // The device: the agent's store, pipeline and lane, sending over real HTTP.
        let store = try ReadingStore(
            configuration: StoreConfiguration(path: directory.appendingPathComponent("device.sqlite").path, diskBudgetBytes: 1 << 32),
            logger: logger
        )
        defer { store.close() }
        let committer = GroupCommitter(store: store, clock: ContinuousClock(), interval: .seconds(3600))
        let lane = DispatchLane(
            transport: HTTPAlertTransport(transport: CurlTransport(baseURL: base), token: deviceToken),
            fallback: nil,
            clock: ContinuousClock(),
            timestamp: { ScenarioRunner.timestamp(0) },
            logger: logger
        )
        let laneTask = Task { await lane.run() }
        defer { laneTask.cancel() }
        var laneEvents = lane.events.makeAsyncIterator()
        let flat = HeartRateMeasurement.encode(HeartRateReading(bpm: 0, contact: .detected))

        var latencies: [Double] = []
        var baseline: [Double] = []
        for sample in 0..<samples {
            let origin = Int64(sample) * 100_000
            let pipeline = AgentPipeline(
                configuration: .init(deviceID: "bench", profile: profile),
                store: store,
                committer: committer,
                ids: SequentialAlertIDs(prefix: "console-\(sample)"),
                now: ScenarioRunner.timestamp(origin),
                dispatch: { action in await lane.submit(action) },
                logger: logger
            )
            var raised: AlertRecord?
            var start = ContinuousClock.now
            var second: Int64 = 0
            while raised == nil, second < 30 {
                start = ContinuousClock.now
                let actions = await pipeline.heartRateNotification(flat, at: ScenarioRunner.timestamp(origin + second * 1000))
                raised = actions.lazy.compactMap { if case .raise(let record) = $0 { record } else { nil } }.first
                second += 1
            }
            guard let alert = raised else { throw ScenarioError(message: "sample \(sample): the flat line never raised an alert") }
            // Until the dispatcher's feed shows this alert being raised.
            let marker = "\"alert_id\":\"\(alert.id)\""
            while true {
                guard let event = try await feed.next() else { throw ScenarioError(message: "the dispatcher feed ended") }
                if event.name == "alert", event.data.contains(marker), event.data.contains("\"type\":\"raised\"") { break }
            }
            latencies.append(ScenarioRunner.milliseconds(ContinuousClock.now - start))

            _ = await pipeline.receive(.cancel(.falseAlarm), at: ScenarioRunner.timestamp(origin + (second + 1) * 1000))
            var closed = false
            while !closed, let event = await laneEvents.next() {
                if case .sent(let update) = event, update.type == .cancelled { closed = true }
            }
            if !closed { throw ScenarioError(message: "sample \(sample): the lane never delivered the cancellation") }
            committer.flush()

            // Baseline: the same server's cheapest round trip, from the same client.
            let healthStart = ContinuousClock.now
            let health = try await client.execute(HTTPClientRequest(url: base.absoluteString + "/health"), timeout: .seconds(10))
            _ = try await health.body.collect(upTo: 1 << 16)
            guard health.status == .ok else { throw ScenarioError(message: "/health answered \(health.status.code)") }
            baseline.append(ScenarioRunner.milliseconds(ContinuousClock.now - healthStart))
        }
        func percentile(_ values: [Double], _ p: Double) -> Double {
            guard !values.isEmpty else { return 0 }
            return values[min(values.count - 1, Int((Double(values.count) * p).rounded(.up)) - 1)]
        }
        let sorted = latencies.sorted()
        let base50 = percentile(baseline.sorted(), 0.5)
        let base99 = percentile(baseline.sorted(), 0.99)
        let p50 = percentile(sorted, 0.5)
        let p99 = percentile(sorted, 0.99)
        return Result(
            samples: sorted.count,
            p50Milliseconds: p50,
            p99Milliseconds: p99,
            maxMilliseconds: sorted.last ?? 0,
            baselineP50Milliseconds: base50,
            baselineP99Milliseconds: base99,
            ratioP50: base50 > 0 ? p50 / base50 : 0,
            ratioP99: base99 > 0 ? p99 / base99 : 0,
            baseline: "GET /health round trip, same server and client, same run"
        )
    }

    /// Server-sent events from a streamed body: `event:` and `data:` lines, a blank line ends one.
    struct SSEReader {
        struct Event {
            var name: String
            var data: String
        }

        var body: HTTPClientResponse.Body.AsyncIterator
        var buffer: [UInt8] = []

        mutating func next() async throws -> Event? {
            while true {
                if let end = Self.blankLine(in: buffer) {
                    let block = String(decoding: buffer[..<end], as: UTF8.self)
                    buffer.removeFirst(end + 2)
                    var event = Event(name: "message", data: "")
                    for line in block.split(separator: "\n") {
                        if line.hasPrefix("event: ") { event.name = String(line.dropFirst(7)) }
                        if line.hasPrefix("data: ") { event.data += line.dropFirst(6) }
                    }
                    if !event.data.isEmpty { return event }
                    continue
                }
                guard let chunk = try await body.next() else { return nil }
                buffer.append(contentsOf: chunk.readableBytesView)
            }
        }

        static func blankLine(in bytes: [UInt8]) -> Int? {
            guard bytes.count >= 2 else { return nil }
            for index in 0..<(bytes.count - 1) where bytes[index] == 0x0A && bytes[index + 1] == 0x0A { return index }
            return nil
        }
    }
}
