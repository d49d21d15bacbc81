// Data path, step 6 (simulation): open-loop load of many devices on a running server.

import Foundation
import NIOCore
import NIOHTTP1
package import NIOSSL
import Synchronization

/// What `trackme-sim bench load` reports (`LoadBenchCommand`), and what
/// `bench intake-under-load` reports of the batches it runs beside the alerts.
package struct LoadBenchmarkResult: Encodable, Sendable {
    package var benchmark = "load"
    /// `open` (each batch at its scheduled time) or `saturate` (closed loop).
    package var mode: String
    package var devices: Int
    package var seconds: Double
    package var offeredBatchesPerSecond: Double
    package var batchesOffered: Int
    package var batchesAcknowledged: Int
    package var batchesFailed: Int
    /// What the failed requests got: their status, or `connection` when it broke.
    package var failures: [String: Int]
    package var batchP50Milliseconds: Double
    package var batchP99Milliseconds: Double
    package var batchMaxMilliseconds: Double
    package var readingsPerSecond: Double
    /// Batches answered per wall second: the offered rate when the server keeps up, its whole
    /// intake rate under `--saturate`.
    package var acknowledgedBatchesPerSecond: Double
    package var alertsAccepted: Int
    package var alertP99Milliseconds: Double
    /// CPU seconds of this process (the generator) over the wall seconds of the load: 1.0 is
    /// one core.
    package var generatorCores: Double

    enum CodingKeys: String, CodingKey {
        case benchmark, mode, devices, seconds
        case offeredBatchesPerSecond = "offered_batches_per_second"
        case batchesOffered = "batches_offered"
        case batchesAcknowledged = "batches_acknowledged"
        case batchesFailed = "batches_failed"
        case failures
        case batchP50Milliseconds = "batch_p50_ms"
        case batchP99Milliseconds = "batch_p99_ms"
        case batchMaxMilliseconds = "batch_max_ms"
        case readingsPerSecond = "readings_per_second"
        case acknowledgedBatchesPerSecond = "acknowledged_batches_per_second"
        case alertsAccepted = "alerts_accepted"
        case alertP99Milliseconds = "alert_p99_ms"
        case generatorCores = "generator_cores"
    }

    package var text: String {
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

package struct LoadBenchmark {
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
    /// Beside another measurement (`bench intake-under-load`): the schedule ends when told to,
    /// `seconds` being only its longest, and says when its first batch is answered.
    var control: LoadControl?

    package init(
        port: Int,
        adminToken: String,
        devices: Int,
        seconds: Int,
        interval: Double,
        readings: Int,
        alerts: Int,
        connections: Int,
        saturate: Bool = false,
        tls: NIOSSLContext? = nil,
        control: LoadControl? = nil
    ) {
        self.port = port
        self.adminToken = adminToken
        self.devices = devices
        self.seconds = seconds
        self.interval = interval
        self.readings = readings
        self.alerts = alerts
        self.connections = connections
        self.saturate = saturate
        self.tls = tls
        self.control = control
    }

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

        /// No more jobs; those not yet taken are still handed out unless `droppingPending`.
        func close(droppingPending: Bool = false) {
            closed = true
            if droppingPending {
                pending.removeAll()
                head = 0
            }
            for waiter in waiters { waiter.resume(returning: nil) }
            waiters.removeAll()
        }
    }

    final class Tally: Sendable {
        struct State {
            var batchLatencies: [Duration] = []
            var alertLatencies: [Duration] = []
            var failed = 0
            /// By status, or `connection` when the connection broke.
            var failures: [String: Int] = [:]
        }
        let state = Mutex(State())
    }

    package func run() async throws -> LoadBenchmarkResult {
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
        let control = self.control
        var offered = total
        defer { control?.markUnderWay() }
        try await withThrowingDiscardingTaskGroup { group in
            for index in 0..<(connections + Self.alertConnections) {
                let jobs = index < connections ? queue : alertQueue
                group.addTask {
                    await Self.worker(port: port, tls: tls, queue: jobs, tally: tally, control: control) { job in
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
                if let control, control.isStopped {
                    // Told to stop: what the server has not taken yet is not sent.
                    offered = k
                    await queue.close(droppingPending: true)
                    await alertQueue.close(droppingPending: true)
                    return
                }
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
        if saturate { offered = await queue.jobsMade }
        return LoadBenchmarkResult(
            mode: saturate ? "saturate" : "open",
            devices: devices,
            seconds: wallSeconds,
            offeredBatchesPerSecond: saturate ? Double(offered) / max(wallSeconds, 1e-9) : Double(devices) / interval,
            batchesOffered: offered,
            batchesAcknowledged: state.batchLatencies.count,
            batchesFailed: state.failed,
            failures: state.failures,
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
        control: LoadControl? = nil,
        request: @escaping @Sendable (Job) -> (String, String, ByteBuffer, [(String, String)])
    ) async {
        var done = false
        while !done {
            do {
                try await BenchHTTPConnection.with(port: port, tls: tls) { connection in
                    while let job = await queue.next() {
                        let (path, token, body, headers) = request(job)
                        let failure: String?
                        do {
                            _ = try await connection.request(
                                method: .POST,
                                uri: path,
                                headers: [("Authorization", "Bearer \(token)")] + headers,
                                body: body,
                                expect: 200
                            )
                            failure = nil
                        } catch let refused as BenchHTTPConnection.Failure {
                            failure = "\(refused.status)"
                        }
                        let latency = job.scheduled.duration(to: ContinuousClock.now)
                        tally.state.withLock { state in
                            if let failure {
                                state.failed += 1
                                state.failures[failure, default: 0] += 1
                                return
                            }
                            switch job.kind {
                            case .batch:
                                state.batchLatencies.append(latency)
                                control?.markUnderWay()
                            case .alert: state.alertLatencies.append(latency)
                            }
                        }
                    }
                }
                done = true
            } catch {
                tally.state.withLock { state in
                    state.failed += 1
                    state.failures["connection", default: 0] += 1
                }
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

/// A load run beside another measurement: it says when it is under way (its first request
/// answered, or it ended without one) and goes on until told to stop.
package final class LoadControl: Sendable {
    private let stopFlag = Atomic(false)
    private let started = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    private let stopping = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))

    package init() {}

    package var isStopped: Bool { stopFlag.load(ordering: .relaxed) }

    package func stop() {
        stopFlag.store(true, ordering: .relaxed)
        stopping.continuation.yield()
        stopping.continuation.finish()
    }

    /// Returns once told to stop, or the waiting task is cancelled.
    package func stopped() async {
        for await _ in stopping.stream { return }
    }

    /// Called by the load; the calls after the first change nothing.
    package func markUnderWay() {
        started.continuation.yield()
        started.continuation.finish()
    }

    /// Returns once the load is under way, or the waiting task is cancelled.
    package func underWay() async {
        for await _ in started.stream { return }
    }
}
