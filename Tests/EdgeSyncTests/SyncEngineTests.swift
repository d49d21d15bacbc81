import EdgeBenchmarks
import EdgeStore
import EdgeSync
import Foundation
import GzipCodec
import Logging
import ServerTestSupport
import Synchronization
import Testing
import TrackMeCore
import TrackMeServer

let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
let deviceID = "pi-0042"

/// A store in a directory of its own, the real server (in-process, SQLite) with the device
/// enrolled, and a fault-injecting proxy in front of it that the agent sends through; torn down
/// together by `with`.
final class SyncFixture {
    let directory: String
    let server: InProcessServer
    let proxy: FaultProxy
    /// The device's bearer token from its enrolment.
    let token: String
    var store: ReadingStore

    private init(server: InProcessServer, budget: Int64) async throws {
        self.server = server
        directory = NSTemporaryDirectory() + "edgesync-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        token = try await server.enrol(deviceID)
        proxy = try FaultProxy(upstreamPort: server.port)
        store = try ReadingStore(configuration: StoreConfiguration(path: directory + "/store.sqlite", diskBudgetBytes: budget), logger: quiet)
    }

    /// Runs `body` with a fresh fixture and tears it down afterwards, whatever happens.
    static func with<T>(budget: Int64 = 10_000_000, _ body: (SyncFixture) async throws -> T) async throws -> T {
        let server = try await InProcessServer.start()
        let f: SyncFixture
        do {
            f = try await SyncFixture(server: server, budget: budget)
        } catch {
            await server.stop()
            throw error
        }
        do {
            let result = try await body(f)
            await f.close()
            return result
        } catch {
            await f.close()
            throw error
        }
    }

    private func close() async {
        await proxy.shutdown()
        store.close()
        if case .failure(let error) = await server.stop() { Issue.record("server ended with \(error)") }
        try? FileManager.default.removeItem(atPath: directory)
    }

    var storePath: String { directory + "/store.sqlite" }

    func reopen() throws {
        store.close()
        store = try ReadingStore(configuration: StoreConfiguration(path: storePath), logger: quiet)
    }

    @discardableResult
    func append(_ range: Range<Int>) throws -> [Int64] {
        try store.append(
            range.map { i in
                let (t, p) = SyntheticReadings.reading(i)
                return NewReading(timestamp: t, payload: p)
            }
        )
    }

    func engine(
        clock: any Clock<Duration> = ContinuousClock(),
        maxBatchReadings: Int = 200,
        timeout: Duration = .seconds(5),
        heartbeatInterval: Duration = .seconds(30),
        sendInterval: Duration = .zero,
        token: String? = nil,
        onAlertsAcknowledged: @escaping @Sendable ([String]) -> Void = { _ in },
        onEvent: @escaping @Sendable (SyncEvent) -> Void = { _ in },
        alertsFirst: @escaping @Sendable () async -> Void = {}
    ) -> SyncEngine {
        SyncEngine(
            store: store,
            transport: CurlTransport(baseURL: proxy.baseURL, timeout: timeout),
            configuration: SyncConfiguration(
                deviceID: deviceID,
                token: token ?? self.token,
                maxBatchReadings: maxBatchReadings,
                heartbeatInterval: heartbeatInterval,
                pollInterval: .milliseconds(10),
                sendInterval: sendInterval,
                backoff: Backoff(initial: .milliseconds(5), maximum: .milliseconds(40), jitter: 1)
            ),
            clock: clock,
            onAlertsAcknowledged: onAlertsAcknowledged,
            onEvent: onEvent,
            logger: quiet,
            seed: 42,
            alertsFirst: alertsFirst
        )
    }

    /// Moves `clock` on by 10 ms `times` times, each once the engine's loop sleeps on it.
    static func step(_ clock: VirtualClock, times: Int) async {
        for _ in 0..<times {
            await clock.waitForSleepers(1)
            clock.advance(by: .milliseconds(10))
        }
    }

    /// Moves `clock` on by 10 ms whenever the engine's loop sleeps on it, until cancelled.
    static func step(_ clock: VirtualClock) -> Task<Void, Never> {
        Task {
            while !Task.isCancelled {
                await clock.waitForSleepers(1)
                clock.advance(by: .milliseconds(10))
                await Task.yield()
            }
        }
    }

    /// What the real server stored for the device, by sequence number.
    func stored() async throws -> [Int64: WireReading] {
        Dictionary(try await server.readings(deviceID: deviceID).map { ($0.sequence, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// `alert_id:update_seq` of every alert update the real server took, in the order it took them.
    func storedAlertOrder() async throws -> [String] {
        try await server.alertUpdates().map { "\($0.alert.id):\($0.updateSequence)" }
    }

    /// The batches the agent sent (through the proxy), decoded, in order, with the status each got.
    func sentBatches() throws -> [(batch: SyncBatch, status: Int?)] {
        try proxy.exchanges.filter { $0.path.hasSuffix("/v1/batches") }.map { exchange in
            let body = exchange.headers["content-encoding"] == "gzip" ? try Gzip.decompress(exchange.body) : exchange.body
            return (try WireCodec.decode(SyncBatch.self, from: Data(body)), exchange.status)
        }
    }

    /// The server holds exactly the store's readings, each once and unchanged, and the store
    /// has them all marked synced.
    func expectExactlyOnce(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let problems = ExactlyOnce.problems(store: try store.allReadings(), server: try await server.readings(deviceID: deviceID))
        #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
    }
}

@Suite("Gzip and backoff")
struct GzipBackoffTests {
    @Test("gzip round-trips and rejects a damaged stream", arguments: [0, 1, 1000, 200_000])
    func gzip(size: Int) throws {
        var generator = SplitMix64(seed: UInt64(size))
        let input = (0..<size).map { i in i % 3 == 0 ? UInt8.random(in: 0...255, using: &generator) : UInt8(i % 7) }
        let compressed = try Gzip.compress(input)
        #expect(compressed.prefix(2) == [0x1F, 0x8B])
        #expect(try Gzip.decompress(compressed) == input)
        var damaged = compressed
        damaged[damaged.count / 2] ^= 0xFF
        damaged.removeLast(4)
        #expect(throws: Gzip.Failure.self) { try Gzip.decompress(damaged) }
    }

    @Test("backoff grows exponentially to the cap with full jitter, and Retry-After wins")
    func backoff() {
        let policy = Backoff(initial: .milliseconds(100), maximum: .seconds(2), jitter: 1, retryAfterCap: .seconds(60))
        #expect(policy.ceiling(afterFailures: 1) == .milliseconds(100))
        #expect(policy.ceiling(afterFailures: 3) == .milliseconds(400))
        #expect(policy.ceiling(afterFailures: 50) == .seconds(2))
        var generator = SplitMix64(seed: 1)
        let delays = (0..<500).map { _ in policy.delay(afterFailures: 4, retryAfter: nil, using: &generator) }
        #expect(delays.allSatisfy { $0 >= .zero && $0 <= .milliseconds(800) })
        #expect(Set(delays).count > 400, "no jitter")
        #expect(delays.contains { $0 < .milliseconds(200) } && delays.contains { $0 > .milliseconds(600) })
        #expect(policy.delay(afterFailures: 1, retryAfter: .seconds(7), using: &generator) == .seconds(7))
        #expect(policy.delay(afterFailures: 1, retryAfter: .seconds(3600), using: &generator) == .seconds(60))
    }
}

@Suite("Sync engine")
struct SyncEngineTests {
    @Test("a backlog drains in bounded batches; the server holds every reading exactly once")
    func drain() async throws {
        try await SyncFixture.with { f in
            try f.append(0..<1234)
            try await f.engine(maxBatchReadings: 200).drain()
            try await f.expectExactlyOnce()
            let batches = try f.sentBatches().map(\.batch)
            #expect(batches.allSatisfy { $0.readings.count <= 200 })
            #expect(Set(batches.map(\.idempotencyKey)).count == batches.count, "a batch went twice")
            // Keys are DEVICE_ID:BATCH_SEQ with increasing numbers.
            let numbers = batches.compactMap { Int64($0.idempotencyKey.split(separator: ":").last ?? "") }
            #expect(numbers == numbers.sorted() && batches.allSatisfy { $0.idempotencyKey.hasPrefix("\(deviceID):") })
        }
    }

    @Test(
        "server faults lose nothing and duplicate nothing",
        arguments: [
            FaultProxy.Fault.status(500), .status(503, retryAfterSeconds: 0), .status(429, retryAfterSeconds: 0),
            .dropRequest, .dropAnswer, .refuseConnections, .holdAnswerUntilClientCloses, .closeAfterAnswer,
        ]
    )
    func faults(fault: FaultProxy.Fault) async throws {
        try await SyncFixture.with { f in
            try f.append(0..<900)
            f.proxy.inject(fault, .next(4))
            try await f.engine(maxBatchReadings: 100, timeout: .seconds(1)).drain()
            try await f.expectExactlyOnce()
            if fault == .dropAnswer || fault == .holdAnswerUntilClientCloses {
                // The server stored batches whose answers were lost: the same batch reached it
                // again, and it stored nothing twice.
                let forwarded = f.proxy.exchanges.filter { $0.path.hasSuffix("/v1/batches") }.compactMap { $0.headers["idempotency-key"] }
                #expect(Set(forwarded).count < forwarded.count, "no batch was resent after a lost answer")
            }
        }
    }

    @Test("the server going away and coming back loses nothing")
    func serverGoesAway() async throws {
        try await SyncFixture.with { f in
            try f.append(0..<600)
            let engine = f.engine(maxBatchReadings: 100)
            #expect(await engine.readingsStep().isSent)
            await f.proxy.goAway()
            for _ in 0..<3 {
                guard case .failed(let error) = await engine.readingsStep() else {
                    Issue.record("a send to an absent server succeeded")
                    return
                }
                #expect(error.code == .transport)
            }
            try f.proxy.comeBack()
            try await engine.drain()
            try await f.expectExactlyOnce()
        }
    }

    @Test("a 4xx other than 408/429 is reported, not retried blindly, and marks nothing synced")
    func rejected() async throws {
        try await SyncFixture.with { f in
            try f.append(0..<10)
            let engine = f.engine(token: "wrong")
            await #expect(throws: SyncError.self) { try await engine.drain() }
            guard case .failed(let error) = await engine.readingsStep() else {
                Issue.record("expected a failure")
                return
            }
            #expect(error.code == .rejected && error.status == 401 && !error.isRetryable)
            #expect(f.store.statistics().unsyncedReadings == 10)
            #expect(try await f.stored().isEmpty)
        }
    }

    @Test("413 Too Large: the batch is abandoned (the server stored nothing) and its readings go again in smaller batches")
    func tooLarge() async throws {
        try await SyncFixture.with { f in
            try f.append(0..<400)
            f.proxy.inject(.status(413), .next(2))
            try await f.engine(maxBatchReadings: 400).drain()
            try await f.expectExactlyOnce()
            #expect(try f.sentBatches().filter { $0.status == 200 }.allSatisfy { $0.batch.readings.count <= 100 })
            #expect(f.store.statistics().inFlightBatches == 0)
        }
    }

    @Test("Retry-After is respected: the lane waits exactly that long on the clock")
    func retryAfter() async throws {
        try await SyncFixture.with { f in
            try f.append(0..<10)
            f.proxy.inject(.status(503, retryAfterSeconds: 7), .next(1))
            let clock = VirtualClock()
            let (events, continuation) = AsyncStream.makeStream(of: SyncEvent.self)
            let engine = f.engine(clock: clock, onEvent: { continuation.yield($0) })
            let runner = Task { await engine.run() }
            defer { runner.cancel() }
            var iterator = events.makeAsyncIterator()
            guard case .sendFailed(let error, let retryIn) = await iterator.next() else {
                Issue.record("expected a failed send first")
                return
            }
            #expect(error.status == 503)
            #expect(retryIn == .seconds(7))
            // Nothing is resent before the 7 s are up.
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(6))
            await clock.waitForSleepers(1)
            #expect(f.proxy.requestCount == 1)
            clock.advance(by: .seconds(1))
            // The latest readings go first, then the rest: wait for the acknowledgements of all
            // ten (the loopback copy answered fast enough for a check after the first one).
            var acknowledgedReadings = 0
            while acknowledgedReadings < 10, let event = await iterator.next() {
                if case .batchAcknowledged(_, let readings, _, _, _) = event { acknowledgedReadings += readings }
            }
            #expect(try await f.stored().count == 10)
        }
    }

    @Test("after an outage the newest heart rate and fix reach the server first, then the backlog drains")
    func latestFirst() async throws {
        try await SyncFixture.with { f in
            let seqs = try f.append(0..<5000)
            await f.proxy.goAway()
            let engine = f.engine(maxBatchReadings: 500)
            #expect(await engine.readingsStep().isFailed)
            let newer = try f.append(5000..<5004)
            #expect(await engine.readingsStep().isFailed)
            try f.proxy.comeBack()
            let outcome = await engine.readingsStep()
            guard case .sent(_, let count, let isLatest) = outcome else {
                Issue.record("the first send after the outage failed: \(outcome)")
                return
            }
            #expect(count == 2 && isLatest)
            #expect(try await f.stored().keys.sorted() == Array(newer.suffix(2)), "the first batch after the outage was not the newest readings")
            try await engine.drain()
            try await f.expectExactlyOnce()
            #expect(try await f.stored().count == seqs.count + newer.count)
        }
    }

    @Test("a batch reserved before a crash is resent after restart with the same key and the same readings")
    func resumeAfterRestart() async throws {
        try await SyncFixture.with { f in
            try f.append(0..<300)
            let reserved = try f.store.reserveBatch(deviceID: deviceID, readings: try f.store.oldestUnsynced(limit: 100), heartbeat: nil)
            try f.reopen()
            let engine = SyncEngine(
                store: f.store,
                transport: CurlTransport(baseURL: f.proxy.baseURL),
                configuration: SyncConfiguration(deviceID: deviceID, token: f.token, maxBatchReadings: 100, latestFirst: false),
                clock: ContinuousClock(),
                logger: quiet
            )
            try await engine.drain()
            let first = try #require(try f.sentBatches().first?.batch)
            #expect(first.idempotencyKey == reserved.batch.idempotencyKey)
            #expect(first.readings.map(\.sequence) == reserved.batch.readings.map(\.sequence))
            try await f.expectExactlyOnce()
        }
    }

    @Test("online in steady state, a small batch waits for the send interval; a full one goes at once")
    func sendInterval() async throws {
        try await SyncFixture.with { f in
            let clock = VirtualClock()
            let (events, continuation) = AsyncStream.makeStream(of: SyncEvent.self)
            let engine = f.engine(clock: clock, maxBatchReadings: 50, sendInterval: .seconds(5), onEvent: { continuation.yield($0) })
            try f.append(0..<10)
            let runner = Task { await engine.run() }
            defer { runner.cancel() }
            var iterator = events.makeAsyncIterator()
            // After a start, the newest heart rate and fix go at once, on their own.
            await clock.waitForSleepers(1)
            guard case .batchAcknowledged(_, 2, _, _, true) = await iterator.next() else {
                Issue.record("the latest batch did not go first")
                return
            }
            await SyncFixture.step(clock, times: 400)
            #expect(try f.sentBatches().count == 1, "a small batch went out before the send interval")
            try f.append(10..<60)
            let ticker = SyncFixture.step(clock)
            defer { ticker.cancel() }
            guard case .batchAcknowledged(_, let readings, _, _, _) = await iterator.next() else {
                Issue.record("no batch")
                return
            }
            #expect(readings == 50)
        }
    }

    @Test("a heartbeat batch goes out on its interval even with nothing to send")
    func heartbeat() async throws {
        try await SyncFixture.with { f in
            let clock = VirtualClock()
            let (events, continuation) = AsyncStream.makeStream(of: SyncEvent.self)
            let engine = f.engine(clock: clock, heartbeatInterval: .seconds(30), onEvent: { continuation.yield($0) })
            let runner = Task { await engine.run() }
            defer { runner.cancel() }
            await SyncFixture.step(clock, times: 2900)
            #expect(f.proxy.requestCount == 0, "a heartbeat went out before its interval")
            #expect(try await f.server.server.deviceContact(deviceID: deviceID).heartbeat == nil)
            var iterator = events.makeAsyncIterator()
            let ticker = SyncFixture.step(clock)
            defer { ticker.cancel() }
            guard case .batchAcknowledged(_, let readings, _, _, _) = await iterator.next() else {
                Issue.record("no heartbeat")
                return
            }
            #expect(readings == 0)
            // The server keeps the heartbeat the empty batch carried.
            let beat = try #require(try await f.server.server.deviceContact(deviceID: deviceID).heartbeat)
            #expect(beat.storeDepth == 0)
        }
    }

    @Test(
        "the lane awaits alertsFirst before every batch (an alert sent there goes before the backlog), and an alert a dispatcher acknowledges is surfaced"
    )
    func alertsFirstAndAcknowledged() async throws {
        try await SyncFixture.with { f in
            try f.append(0..<3000)
            let t = ReadingTimestamp(monotonicNanoseconds: 9, bootID: "b", wallClockMilliseconds: nil, wallClockTrusted: false)
            let record = AlertRecord(id: "sos-1", deviceID: deviceID, kind: .manual, state: .raised, firstCritical: t, raised: t)
            let sender = HTTPAlertSender(transport: CurlTransport(baseURL: f.proxy.baseURL), token: f.token)
            let proxy = f.proxy
            // What the dispatch lane does there: the alert goes while the readings wait.
            let calls = Mutex(0)
            let batchesBeforeAlert = Mutex(-1)
            let alertsFirst: @Sendable () async -> Void = {
                guard
                    calls.withLock({
                        $0 += 1
                        return $0
                    }) == 1
                else { return }
                batchesBeforeAlert.withLock { $0 = proxy.exchanges.filter { $0.path.hasSuffix("/v1/batches") }.count }
                try? await sender.send(AlertUpdate(alert: record, updateSequence: 0, type: .raised, sent: t))
            }
            let acknowledged = Mutex<[String]>([])
            let (events, continuation) = AsyncStream.makeStream(of: SyncEvent.self)
            let engine = f.engine(
                maxBatchReadings: 100,
                onAlertsAcknowledged: { ids in acknowledged.withLock { $0 += ids } },
                onEvent: { continuation.yield($0) },
                alertsFirst: alertsFirst
            )
            let runner = Task { await engine.run() }
            defer { runner.cancel() }
            var batches = 0
            for await event in events {
                guard case .batchAcknowledged = event else { continue }
                batches += 1
                // A dispatcher acknowledges it at the server; the backlog's next answers carry it.
                if batches == 1 { try await f.server.acknowledgeAlert("sos-1") }
                if acknowledged.withLock({ $0.contains("sos-1") }) { break }
            }
            #expect(batchesBeforeAlert.withLock { $0 } == 0, "readings went out before the alert")
            #expect(calls.withLock { $0 } >= batches, "a batch went without waiting for the alerts")
            #expect(try await f.storedAlertOrder() == ["sos-1:0"])
            #expect(acknowledged.withLock { $0 } == ["sos-1"])
        }
    }

    @Test("the HTTP alert sender delivers idempotently and reports a rejection")
    func alertSender() async throws {
        try await SyncFixture.with { f in
            let t = ReadingTimestamp(monotonicNanoseconds: 9, bootID: "b", wallClockMilliseconds: nil, wallClockTrusted: false)
            let update = AlertUpdate(
                alert: AlertRecord(id: "a", deviceID: deviceID, kind: .noPulse, state: .raised, firstCritical: t),
                updateSequence: 0,
                type: .raised,
                sent: t
            )
            let sender = HTTPAlertSender(transport: CurlTransport(baseURL: f.proxy.baseURL), token: f.token)
            try await sender.send(update)
            try await sender.send(update)
            #expect(try await f.server.alertUpdates() == [update])
            #expect(f.proxy.exchanges.filter { $0.path.hasSuffix("/v1/alerts") }.map(\.status) == [200, 200])
            let bad = HTTPAlertSender(transport: CurlTransport(baseURL: f.proxy.baseURL), token: "nope")
            await #expect(throws: SyncError.self) { try await bad.send(update) }
            await f.proxy.goAway()
            do throws(SyncError) {
                try await sender.send(update)
                Issue.record("sent to an absent server")
            } catch {
                #expect(error.code == .transport && error.isRetryable)
            }
        }
    }

    @Test("disk budget reached during a long offline window: drops are reported to the server, alerts survive")
    func budgetDuringOutage() async throws {
        try await SyncFixture.with(budget: 150_000) { f in
            try f.append(0..<500)
            try await f.engine().drain()
            let t = ReadingTimestamp(
                monotonicNanoseconds: 1_000_000_000 + 700 * 500_000_000,
                bootID: SyntheticReadings.bootID,
                wallClockMilliseconds: nil,
                wallClockTrusted: false
            )
            let record = AlertRecord(id: "offline-sos", deviceID: deviceID, kind: .noPulse, state: .raised, firstCritical: t)
            #expect(f.store.appendAlert(AlertUpdate(alert: record, updateSequence: 0, type: .raised, sent: t)) == .durable)
            for chunk in stride(from: 500, to: 12_500, by: 500) { try f.append(chunk..<chunk + 500) }
            let stats = f.store.statistics()
            #expect(stats.droppedByBudgetTotal > 0)
            try await f.engine().drain()
            // What the server recorded, and what the batches carried, are the store's count.
            let reported = try f.server.droppedByBudget(deviceID: deviceID)
            #expect(reported == stats.droppedByBudgetTotal)
            #expect(try f.sentBatches().filter { $0.status == 200 }.reduce(Int64(0)) { $0 + $1.batch.droppedByBudget } == reported)
            #expect(try await f.stored().count + Int(reported) == 12_500)
            #expect(try f.store.alertStates().map(\.alert.id) == ["offline-sos"])
        }
    }
}

extension ReadingsStepOutcome {
    var isSent: Bool { if case .sent = self { true } else { false } }
    var isFailed: Bool { if case .failed = self { true } else { false } }
}
