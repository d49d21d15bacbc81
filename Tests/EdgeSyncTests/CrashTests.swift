import EdgeBenchmarks
import EdgeStore
import EdgeSync
import Foundation
import ServerTestSupport
import Testing
import TrackMeCore
import TrackMeSystem

/// The crash child built next to the test bundle (`store-crash-child`, declared in Package.swift).
func crashChildURL() throws -> URL {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = directory.appendingPathComponent("store-crash-child")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        directory.deleteLastPathComponent()
    }
    throw CrashChildMissing()
}

struct CrashChildMissing: Error, CustomStringConvertible {
    var description: String { "store-crash-child not found next to the test binary: run `swift build --build-tests` first" }
}

/// What one killed child had acknowledged.
struct ChildRun {
    var committed: [Int64] = []
    var alerts: [String] = []
    var killedBySignal = false
}

/// Runs the child, waits until it has acknowledged `target` readings (0: kill at once), kills it
/// with SIGKILL and collects everything it printed before dying. Blocking: call off the
/// cooperative pool.
func runAndKill(child: URL, arguments: [String], target: Int) throws -> ChildRun {
    let pipe = Pipe()
    let process = try SpawnedProcess.launch(child.path, arguments: arguments, standardOutput: .pipe(pipe))
    var run = ChildRun()
    var pending = Data()
    func parse(_ data: Data) {
        pending.append(data)
        while let newline = pending.firstIndex(of: 0x0A) {
            let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
            pending.removeSubrange(pending.startIndex...newline)
            if line.hasPrefix("C "), let seq = Int64(line.dropFirst(2)) { run.committed.append(seq) }
            if line.hasPrefix("A ") { run.alerts.append(String(line.dropFirst(2))) }
        }
    }
    let handle = pipe.fileHandleForReading
    while run.committed.count < target {
        let data = handle.availableData
        if data.isEmpty { break }
        parse(data)
    }
    let ending = process.killAndWait()
    parse(handle.readDataToEndOfFile())
    run.killedBySignal = ending == .signalled(SIGKILL)
    return run
}

@Suite("Crash and restart")
struct CrashTests {
    /// Cycles of the kill test: 40 in `make test`, `TRACKME_CRASH_CYCLES` (1000 in `make soak`).
    static var cycles: Int {
        ProcessInfo.processInfo.environment["TRACKME_CRASH_CYCLES"].flatMap(Int.init).map { max($0, 20) } ?? 40
    }

    /// Issue 17: the same with the store encrypted at rest (every row sealed; salvage opens the
    /// moved-aside copies with the key).
    static let storeKeyHex = String(repeating: "6b", count: 32)

    @Test(
        "SIGKILL at random moments, during start-up, batches and salvage: every acknowledged reading and alert survives, the file stays intact, sync continues, and the server ends with each reading exactly once",
        arguments: [false, true]
    )
    func killRepeatedly(encrypted: Bool) async throws {
        let cycles = Self.cycles
        let key = try encrypted ? StoreKey(material: Array(Self.storeKeyHex.utf8), source: "test") : nil
        let started = ContinuousClock.now
        let child = try crashChildURL()
        try await SyncFixture.with { f in
            f.store.close()
            let storePath = f.storePath
            // The children send to the real server directly (no faults but their own deaths).
            let url = f.server.baseURL.absoluteString
            let token = f.token
            // The blocking loop runs on a thread of its own, not on the cooperative pool.
            let outcome: Result<(acknowledged: Int, runs: [ChildRun], failures: [String]), any Error> = await withCheckedContinuation { done in
                Thread {
                    var generator = SplitMix64(seed: 2026)
                    var acknowledged = Set<Int64>()
                    var alerts = Set<String>()
                    var runs: [ChildRun] = []
                    var failures: [String] = []
                    do {
                        for index in 0..<cycles {
                            // Every 25th run starts with a moved-aside copy of the store to salvage
                            // (a snapshot of the store as the last check left it): the child is killed
                            // at once or early, during salvage, which must be all or nothing.
                            let salvaging = index % 25 == 12
                            if salvaging {
                                let aside = storePath + ".corrupt-\(1000 + index)"
                                try FileManager.default.copyItem(atPath: storePath, toPath: aside)
                                if FileManager.default.fileExists(atPath: storePath + "-wal") {
                                    try FileManager.default.copyItem(atPath: storePath + "-wal", toPath: aside + "-wal")
                                }
                            }
                            // Mostly mid-stream, sometimes right at start-up (open, migration,
                            // recovery, salvage).
                            // A long soak takes fewer readings per run, so that a thousand runs stay
                            // within the disk budget (eviction would remove synced readings the
                            // check expects) and each check stays quick.
                            let target =
                                index % 10 == 3 || salvaging
                                ? Int.random(in: 0...2, using: &generator) : Int.random(in: 1...(cycles > 100 ? 400 : 3000), using: &generator)
                            let run = try runAndKill(
                                child: child,
                                arguments: [storePath, url, deviceID, token, String(index)] + (encrypted ? [Self.storeKeyHex] : []),
                                target: target
                            )
                            runs.append(run)
                            acknowledged.formUnion(run.committed)
                            alerts.formUnion(run.alerts)
                            let store = try ReadingStore(
                                configuration: StoreConfiguration(path: storePath, diskBudgetBytes: 64 << 20, encryptionKey: key),
                                logger: quiet
                            )
                            defer { store.close() }
                            if store.openReport.memoryFallback != nil { failures.append("run \(index): store not opened on disk") }
                            if store.openReport.movedAsidePath != nil { failures.append("run \(index): store was found corrupt") }
                            let verdict = try store.integrityCheck()
                            if verdict != ["ok"] { failures.append("run \(index): integrity_check \(verdict)") }
                            let present = Set(try store.sequenceNumbers())
                            let missing = acknowledged.subtracting(present)
                            if !missing.isEmpty { failures.append("run \(index): \(missing.count) acknowledged readings missing") }
                            let journaled = Set(try store.alertStates().map { "\($0.alert.id):\($0.updateSequence)" })
                            if !alerts.isSubset(of: journaled) { failures.append("run \(index): acknowledged alert missing") }
                            if salvaging {
                                // Opening the store above finished the salvage if the child did not.
                                let aside = storePath + ".corrupt-\(1000 + index)"
                                if try store.salvageRecords().contains(where: { $0.path == aside }) != true {
                                    failures.append("run \(index): the copy beside the store was not salvaged")
                                }
                                try? FileManager.default.removeItem(atPath: aside)
                                try? FileManager.default.removeItem(atPath: aside + "-wal")
                            }
                        }
                        done.resume(returning: .success((acknowledged.count, runs, failures)))
                    } catch {
                        done.resume(returning: .failure(error))
                    }
                }.start()
            }
            let (acknowledgedCount, runs, failures) = try outcome.get()
            #expect(failures.isEmpty, "\(failures)")
            #expect(runs.count == cycles)
            #expect(runs.allSatisfy { $0.killedBySignal })
            #expect(acknowledgedCount > 1000)
            // The children synced while they ran (and were killed mid-batch).
            let syncedByChildren = try await f.stored().count
            #expect(syncedByChildren > 0)

            // Sync continues from the store's cursor: drain the rest and compare.
            let store = try ReadingStore(
                configuration: StoreConfiguration(path: storePath, diskBudgetBytes: 64 << 20, encryptionKey: key),
                logger: quiet
            )
            #expect(store.isEncrypted == encrypted)
            f.store = store
            let engine = f.engine(maxBatchReadings: 500)
            try await engine.drain()
            // The children journaled alerts; sending them is the dispatch lane's (not run here).
            let sender = HTTPAlertSender(transport: CurlTransport(baseURL: f.proxy.baseURL), token: f.token)
            for update in store.pendingAlertUpdates() { try await sender.send(update) }
            try await f.expectExactlyOnce()
            // The figures for simulations/RELIABILITY.md.
            let atServer = try await f.stored().count
            print(
                "crash test\(encrypted ? " (store encrypted)" : ""): \(cycles) SIGKILL cycles (\(runs.filter { $0.committed.isEmpty }.count) before any commit), "
                    + "\(acknowledgedCount) readings acknowledged by the store, \(atServer) at the server "
                    + "exactly once, \(syncedByChildren) of them synced by the killed children, in \(ContinuousClock.now - started)"
            )
            let journaledAlerts = try store.alertStates().map(\.alert.id)
            #expect(Set(try await f.server.alertUpdates().map(\.alert.id)) == Set(journaledAlerts))
        }
    }
}
