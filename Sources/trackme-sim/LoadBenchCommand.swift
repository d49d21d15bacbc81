import ArgumentParser
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization
import TrackMeCore

/// `trackme-sim bench load --port P --devices N [--seconds 60] [--ca-file CA] [--json]`: an
/// open-loop load on a running `trackme-server` (one instance, or a balancer in front of several;
/// `simulations/bench-load.sh` starts them). N simulated devices each send a batch of about 10
/// readings with its heartbeat every 5 s, spread evenly over the interval, and a few send an
/// alert; each request leaves at its scheduled time whatever the server's latency (a pool of
/// keep-alive connections carries them; when all are busy a request waits, and that wait counts
/// in its latency, which runs from the scheduled time, so a slow server cannot slow the offered
/// load and hide its own queueing). Alerts go on four connections of their own, as a device's
/// alert lane sends them beside its batches, so their latency is the server's alone. Reports the
/// batch latency p50/p99/max, the alerts' p99, what was offered and completed, the readings
/// stored per second, and the generator's own CPU (user + system time of this process over the
/// wall time) so that a generator near a core says so.
///
/// `--saturate` measures the baseline the open-loop figures are divided by: the same devices'
/// batches sent closed-loop (each connection sends the next as soon as the last is answered) for
/// the same time, with nothing else, so the server's whole intake rate on this machine. The knee
/// (the most devices whose batch p99 stays within the goal) over that rate is a ratio that
/// travels between machines where a device count does not.
struct LoadBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Open-loop load on a running trackme-server: N devices at their real cadence; batch latency p99."
    )

    @Option(help: "Port of the server or balancer on 127.0.0.1.")
    var port: Int

    @Option(help: "The server's admin token (enrols the devices).")
    var adminToken: String

    @Option(help: "Simulated devices.")
    var devices = 1000

    @Option(help: "Seconds of load after enrolment.")
    var seconds = 60

    @Option(help: "Seconds between one device's batches.")
    var interval = 5.0

    @Option(help: "Heart-rate readings per batch.")
    var readings = 10

    @Option(help: "Alerts in all, spread over the run.")
    var alerts = 10

    @Option(help: "Keep-alive connections carrying the load.")
    var connections = 256

    @Option(help: "CA file to verify the server with (HTTPS); without it, plain HTTP.")
    var caFile: String?

    @Flag(help: "Closed loop: send batches as fast as the server answers them (the intake rate with nothing else); no alerts.")
    var saturate = false

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() async throws {
        guard devices > 0, seconds > 0, interval > 0, connections > 0 else {
            throw ValidationError("devices, seconds, interval and connections must be positive")
        }
        let tls = try caFile.map { try BenchCertificate.clientContext(trusting: $0) }
        let result = try await LoadBenchmark(
            port: port,
            adminToken: adminToken,
            devices: devices,
            seconds: seconds,
            interval: interval,
            readings: readings,
            alerts: alerts,
            connections: connections,
            saturate: saturate,
            tls: tls
        ).run()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
        } else {
            print(result.text)
        }
    }
}

struct LoadBenchmarkResult: Encodable {
    var benchmark = "load"
    /// `open` (each batch at its scheduled time) or `saturate` (closed loop).
    var mode: String
    var devices: Int
    var seconds: Double
    var offeredBatchesPerSecond: Double
    var batchesOffered: Int
    var batchesAcknowledged: Int
    var batchesFailed: Int
    var batchP50Milliseconds: Double
    var batchP99Milliseconds: Double
    var batchMaxMilliseconds: Double
    var readingsPerSecond: Double
    /// Batches answered per wall second: the offered rate when the server keeps up, its whole
    /// intake rate under `--saturate`.
    var acknowledgedBatchesPerSecond: Double
    var alertsAccepted: Int
    var alertP99Milliseconds: Double
    /// CPU seconds of this process (the generator) over the wall seconds of the load: 1.0 is
    /// one core.
    var generatorCores: Double

    enum CodingKeys: String, CodingKey {
        case benchmark, mode, devices, seconds
        case offeredBatchesPerSecond = "offered_batches_per_second"
        case batchesOffered = "batches_offered"
        case batchesAcknowledged = "batches_acknowledged"
        case batchesFailed = "batches_failed"
        case batchP50Milliseconds = "batch_p50_ms"
        case batchP99Milliseconds = "batch_p99_ms"
        case batchMaxMilliseconds = "batch_max_ms"
        case readingsPerSecond = "readings_per_second"
        case acknowledgedBatchesPerSecond = "acknowledged_batches_per_second"
        case alertsAccepted = "alerts_accepted"
        case alertP99Milliseconds = "alert_p99_ms"
        case generatorCores = "generator_cores"
    }

    var text: String {
        func f(_ x: Double) -> String { String(format: "%.1f", x) }
        let loop = mode == "saturate" ? "closed loop, as fast as answered" : "open loop, a batch each every interval"
        return """
            load benchmark (\(loop)): \(devices) devices, \(f(seconds)) s
              offered:  \(batchesOffered) batches = \(f(offeredBatchesPerSecond)) batches/s
              done:     \(batchesAcknowledged) acknowledged (\(f(acknowledgedBatchesPerSecond))/s), \(batchesFailed) failed; \(f(readingsPerSecond)) readings/s
              latency:  batch p50 \(f(batchP50Milliseconds)) ms, p99 \(f(batchP99Milliseconds)) ms, max \(f(batchMaxMilliseconds)) ms (from the scheduled time)
              alerts:   \(alertsAccepted) accepted, p99 \(f(alertP99Milliseconds)) ms
              generator: \(String(format: "%.2f", generatorCores)) cores of CPU
            """
    }
}

struct LoadBenchmark {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    var port: Int
    var adminToken: String
    var devices: Int
    var seconds: Int
    var interval: Double
    var readings: Int
    var alerts: Int
    var connections: Int
    var saturate = false
    var tls: NIOSSLContext?

    /// Keep-alive connections that carry only alerts.
    static let alertConnections = 4

    /// One request the schedule asks for.
    struct Job: Sendable {
        enum Kind: Sendable {
            case batch(device: Int, number: Int)
            case alert(device: Int)
        }
        var kind: Kind
        var scheduled: ContinuousClock.Instant
    }

    /// Requests waiting for a free connection, handed out in order; or, closed-loop, a new
    /// batch for the next device each time a connection asks, until `until`.
    actor JobQueue {
        private var pending: [Job] = []
        private var head = 0
        private var waiters: [CheckedContinuation<Job?, Never>] = []
        private var closed = false
        private let closedLoop: (until: ContinuousClock.Instant, devices: Int)?
        private var made = 0

        init(closedLoopUntil until: ContinuousClock.Instant? = nil, devices: Int = 1) {
            closedLoop = until.map { ($0, max(1, devices)) }
        }

        /// Closed loop: the jobs handed out so far.
        var jobsMade: Int { made }

        func put(_ job: Job) {
            if !waiters.isEmpty {
                waiters.removeFirst().resume(returning: job)
            } else {
                pending.append(job)
            }
        }

        func next() async -> Job? {
            if let closedLoop {
                let now = ContinuousClock.now
                guard now < closedLoop.until else { return nil }
                defer { made += 1 }
                return Job(kind: .batch(device: made % closedLoop.devices, number: made / closedLoop.devices + 1), scheduled: now)
            }
            if head < pending.count {
                defer {
                    head += 1
                    if head > 4096, head * 2 > pending.count {
                        pending.removeFirst(head)
                        head = 0
                    }
                }
                return pending[head]
            }
            if closed { return nil }
            return await withCheckedContinuation { waiters.append($0) }
        }

        func close() {
            closed = true
            for waiter in waiters { waiter.resume(returning: nil) }
            waiters.removeAll()
        }
    }

    final class Tally: Sendable {
        struct State {
            var batchLatencies: [Duration] = []
            var alertLatencies: [Duration] = []
            var failed = 0
        }
        let state = Mutex(State())
    }

    func run() async throws -> LoadBenchmarkResult {
        let runID = UUID().uuidString.prefix(8).lowercased()
        let ids = (0..<devices).map { "load-\(runID)-\($0)" }
        let tokens = try await enrol(ids)
        let wall = Int64((Date().timeIntervalSince1970 * 1000).rounded())
        // The schedule starts a moment after its last line is set up; the closed loop at once.
        let start = ContinuousClock.now + (saturate ? .zero : .milliseconds(200))
        let queue = saturate ? JobQueue(closedLoopUntil: start + .seconds(seconds), devices: devices) : JobQueue()
        // Alerts on connections of their own, as a device's alert lane sends them: queued behind
        // the generator's backlog of batches they would measure the generator, not the server.
        let alertQueue = JobQueue()
        let tally = Tally()
        let clock = ContinuousClock()
        let step = Duration.seconds(interval) / devices
        let total = Int((Double(seconds) / interval).rounded(.down)) * devices
        // Alerts at evenly spaced slots of the schedule, from different devices.
        let alertEvery = alerts > 0 ? max(1, total / alerts) : Int.max
        let readingsPerBatch = readings
        let cpuBefore = Self.cpuSeconds()
        try await withThrowingDiscardingTaskGroup { group in
            for index in 0..<(connections + Self.alertConnections) {
                let jobs = index < connections ? queue : alertQueue
                group.addTask {
                    await Self.worker(port: port, tls: tls, queue: jobs, tally: tally) { job in
                        switch job.kind {
                        case .batch(let device, let number):
                            let body = Self.batchBody(deviceID: ids[device], number: number, readings: readingsPerBatch, wall: wall)
                            return (
                                "/v1/batches", tokens[device], body,
                                [("Idempotency-Key", "\(ids[device]):\(number)"), ("Content-Type", "application/json")]
                            )
                        case .alert(let device):
                            let body = Self.alertBody(deviceID: ids[device], alertID: "\(ids[device])-alert", wall: wall)
                            return ("/v1/alerts", tokens[device], body, [("Content-Type", "application/json")])
                        }
                    }
                }
            }
            if saturate {
                await alertQueue.close()
                return
            }
            // The schedule: send k goes to device k % N at start + k * interval / N.
            for k in 0..<total {
                let at = start + step * k
                if at > clock.now { try await clock.sleep(until: at) }
                await queue.put(Job(kind: .batch(device: k % devices, number: k / devices + 1), scheduled: at))
                if k % alertEvery == alertEvery / 2 { await alertQueue.put(Job(kind: .alert(device: k % devices), scheduled: at)) }
            }
            await queue.close()
            await alertQueue.close()
        }
        let elapsed = start.duration(to: clock.now)
        let cpu = Self.cpuSeconds() - cpuBefore
        let state = tally.state.withLock { $0 }
        let wallSeconds = Self.seconds(elapsed)
        let offered = saturate ? await queue.jobsMade : total
        return LoadBenchmarkResult(
            mode: saturate ? "saturate" : "open",
            devices: devices,
            seconds: wallSeconds,
            offeredBatchesPerSecond: saturate ? Double(offered) / max(wallSeconds, 1e-9) : Double(devices) / interval,
            batchesOffered: offered,
            batchesAcknowledged: state.batchLatencies.count,
            batchesFailed: state.failed,
            batchP50Milliseconds: Self.percentile(state.batchLatencies, 0.5),
            batchP99Milliseconds: Self.percentile(state.batchLatencies, 0.99),
            batchMaxMilliseconds: Self.percentile(state.batchLatencies, 1),
            readingsPerSecond: Double(state.batchLatencies.count * readings) / max(wallSeconds, 1e-9),
            acknowledgedBatchesPerSecond: Double(state.batchLatencies.count) / max(wallSeconds, 1e-9),
            alertsAccepted: state.alertLatencies.count,
            alertP99Milliseconds: Self.percentile(state.alertLatencies, 0.99),
            generatorCores: cpu / max(wallSeconds, 1e-9)
        )
    }

    /// One keep-alive connection taking jobs until the queue closes; a broken connection is
    /// opened again and the job that broke it counts as failed.
    static func worker(
        port: Int,
        tls: NIOSSLContext?,
        queue: JobQueue,
        tally: Tally,
        request: @escaping @Sendable (Job) -> (String, String, ByteBuffer, [(String, String)])
    ) async {
        var done = false
        while !done {
            do {
                try await BenchHTTPConnection.with(port: port, tls: tls) { connection in
                    while let job = await queue.next() {
                        let (path, token, body, headers) = request(job)
                        let ok: Bool
                        do {
                            _ = try await connection.request(
                                method: .POST,
                                uri: path,
                                headers: [("Authorization", "Bearer \(token)")] + headers,
                                body: body,
                                expect: 200
                            )
                            ok = true
                        } catch let failure as BenchHTTPConnection.Failure {
                            _ = failure
                            ok = false
                        }
                        let latency = job.scheduled.duration(to: ContinuousClock.now)
                        tally.state.withLock { state in
                            guard ok else {
                                state.failed += 1
                                return
                            }
                            switch job.kind {
                            case .batch: state.batchLatencies.append(latency)
                            case .alert: state.alertLatencies.append(latency)
                            }
                        }
                    }
                }
                done = true
            } catch {
                tally.state.withLock { $0.failed += 1 }
            }
        }
    }

    /// Enrols every device through the admin API, 64 at a time; their tokens in order.
    private func enrol(_ ids: [String]) async throws -> [String] {
        final class Enrolled: Sendable {
            let tokens: Mutex<[String?]>
            let next = Atomic<Int>(0)
            init(count: Int) { tokens = Mutex(Array(repeating: nil, count: count)) }
        }
        let enrolled = Enrolled(count: ids.count)
        let adminToken = self.adminToken
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<min(64, ids.count) {
                group.addTask { [port, tls] in
                    try await BenchHTTPConnection.with(port: port, tls: tls) { connection in
                        while true {
                            let index = enrolled.next.add(1, ordering: .relaxed).oldValue
                            guard index < ids.count else { return }
                            let body = ByteBuffer(string: #"{"device_id":"\#(ids[index])","person":{"name":"Load \#(index)","age":70}}"#)
                            let (_, text) = try await connection.requestWithBody(
                                method: .POST,
                                uri: "/v1/devices",
                                headers: [("Authorization", "Bearer \(adminToken)"), ("Content-Type", "application/json")],
                                body: body,
                                expect: 201
                            )
                            guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                                let token = object["token"] as? String
                            else { throw Failure(description: "enrolment of \(ids[index]) answered without a token: \(text)") }
                            enrolled.tokens.withLock { $0[index] = token }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        return try enrolled.tokens.withLock { list in
            try list.map { token in
                guard let token else { throw Failure(description: "a device was not enrolled") }
                return token
            }
        }
    }

    /// A batch as the agent sends it (WIRE.md), written directly: the generator must stay cheap.
    static func batchBody(deviceID: String, number: Int, readings: Int, wall: Int64) -> ByteBuffer {
        var json = #"{"version":1,"device_id":"\#(deviceID)","batch_seq":\#(number),"idempotency_key":"\#(deviceID):\#(number)","#
        json +=
            #""dropped_by_budget":0,"heartbeat":{"strap":"connected","gpsd":"fix","store_depth":\#(readings),"store_bytes":65536,"battery_pct":80},"readings":["#
        let first = (number - 1) * readings + 1
        for seq in first..<(first + readings) {
            if seq > first { json += "," }
            json +=
                #"{"kind":"hr","seq":\#(seq),"t":{"boot_id":"load","mono_ns":\#(seq * 500_000_000),"wall_ms":\#(wall + Int64(seq) * 500),"wall_trusted":true},"#
            json += #""hr":{"bpm":\#(60 + seq % 40),"contact":"detected","rr":[843,829]}}"#
        }
        json += "]}"
        return ByteBuffer(string: json)
    }

    static func alertBody(deviceID: String, alertID: String, wall: Int64) -> ByteBuffer {
        let stamp = #"{"boot_id":"load","mono_ns":1000000000,"wall_ms":\#(wall),"wall_trusted":true}"#
        return ByteBuffer(
            string:
                #"{"version":1,"update_seq":0,"type":"raised","sent":\#(stamp),"alert":{"alert_id":"\#(alertID)","device_id":"\#(deviceID)","kind":"manual","state":"raised","first_critical":\#(stamp),"raised":\#(stamp),"triggering_readings":[]}}"#
        )
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func seconds(_ d: Duration) -> Double { BenchFigures.seconds(d) }

    static func percentile(_ values: [Duration], _ p: Double) -> Double { BenchFigures.percentile(values, p) }
}
