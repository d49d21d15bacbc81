// A child process for the crash tests: appends readings to the store as fast as group commit
// allows, syncs to the test server at the same time, and prints every committed (acknowledged)
// sequence number as `C SEQ` and every durably journaled alert update as `A ID:UPDATE_SEQ`,
// flushing stdout each time. The parent kills it with SIGKILL at random moments.
//
// Usage: store-crash-child STORE_PATH SERVER_URL DEVICE_ID TOKEN RUN_INDEX [STORE_KEY_HEX]
// (with a key, the store is encrypted at rest, issue 17)
import EdgeBenchmarks
import EdgeStore
import EdgeSync
import Foundation
import TrackMeCore

let arguments = CommandLine.arguments
guard arguments.count == 6 || arguments.count == 7, let serverURL = URL(string: arguments[2]), let run = Int(arguments[5]) else {
    FileHandle.standardError.write(Data("usage: store-crash-child STORE_PATH SERVER_URL DEVICE_ID TOKEN RUN_INDEX [STORE_KEY_HEX]\n".utf8))
    exit(2)
}
let key = try arguments.count == 7 ? StoreKey(material: Array(arguments[6].utf8), source: "argument") : nil
let deviceID = arguments[3]

/// One unbuffered write(2) per line group: what the parent reads was acknowledged before it
/// was written, and nothing sits in a stdio buffer when SIGKILL arrives.
@Sendable func emit(_ text: String) {
    FileHandle.standardOutput.write(Data(text.utf8))
}
let store = try ReadingStore(configuration: StoreConfiguration(path: arguments[1], diskBudgetBytes: 64 << 20, encryptionKey: key))
let committer = GroupCommitter(store: store, clock: ContinuousClock(), interval: .milliseconds(5), maxGroupSize: 64) { seqs in
    var text = ""
    for seq in seqs { text += "C \(seq)\n" }
    emit(text)
}
let engine = SyncEngine(
    store: store,
    transport: CurlTransport(baseURL: serverURL, timeout: .seconds(5)),
    configuration: SyncConfiguration(
        deviceID: deviceID,
        token: arguments[4],
        maxBatchReadings: 150,
        heartbeatInterval: .seconds(1),
        pollInterval: .milliseconds(5),
        sendInterval: .zero,
        backoff: Backoff(initial: .milliseconds(5), maximum: .milliseconds(50), jitter: 1)
    ),
    clock: ContinuousClock()
)

let alert = AlertRecord(
    id: "crash-run-\(run)",
    deviceID: deviceID,
    kind: .manual,
    state: .raised,
    firstCritical: ReadingTimestamp(monotonicNanoseconds: 1, bootID: "crash-child", wallClockMilliseconds: nil, wallClockTrusted: false)
)
if case .durable = store.appendAlert(
    AlertUpdate(alert: alert, updateSequence: 0, type: .raised, sent: alert.firstCritical)
) {
    emit("A \(alert.id):0\n")
}

let syncTask = Task { await engine.run() }
let commitTask = Task { await committer.run() }
var index = run * 1_000_000
while true {
    let (timestamp, payload) = SyntheticReadings.reading(index, bootID: "crash-run-\(run)")
    committer.append(payload, at: timestamp)
    index += 1
    if index % 16 == 0 { try await Task.sleep(for: .milliseconds(1)) }
}
