import Foundation
import Synchronization
import SystemPackage
import TrackMeSystem

#if canImport(Glibc)
import Glibc
#endif

/// The real gpsd, started in the foreground on a loopback port with a temporary directory of its
/// own (control socket, TMPDIR), for tests and the simulation harness. `start` returns once gpsd
/// has logged that it is up; the process is killed and its directory removed by `stop()` (or on
/// deinit).
public final class GPSDProcess: Sendable {
    /// The port gpsd listens on (127.0.0.1 and ::1).
    public let port: Int
    public let device: String
    private let process: SpawnedProcess
    private let directory: URL
    private let output: OutputLog

    private init(port: Int, device: String, process: SpawnedProcess, directory: URL, output: OutputLog) {
        self.port = port
        self.device = device
        self.process = process
        self.directory = directory
        self.output = output
    }

    deinit {
        stop()
    }

    /// Starts `gpsd -N -S PORT -F SOCKET DEVICE`. Without `port`, picks a free one (and tries
    /// another if gpsd loses the race for it). Throws if gpsd is not installed or exits early.
    public static func start(device: String, port: Int? = nil) async throws -> GPSDProcess {
        let executable = try ExternalProgram.path(of: "gpsd")
        var lastError: (any Error)?
        for _ in 0..<(port == nil ? 5 : 1) {
            let chosen = try port ?? freeLoopbackPort()
            do {
                return try await launch(executable: executable, device: device, port: chosen)
            } catch {
                lastError = error
            }
        }
        throw lastError ?? GPSDTestSupportError(code: .startFailed, context: "gpsd did not start")
    }

    /// The last lines gpsd wrote (at `-D 3`), for a failing test's message.
    public var recentOutput: String { output.text }

    /// Waits until gpsd has logged a line containing `text` (at `-D 3`: client attach and
    /// detach, device activation, ...); false if gpsd exits first. Lines already logged count.
    public func waitForLog(containing text: String) async -> Bool {
        await output.waitForLine(containing: text)
    }

    /// Kills gpsd with SIGKILL (as a crash would) and waits for it to exit; the directory stays,
    /// so a new gpsd can be started on the same port.
    public func kill() {
        process.killAndWait()
    }

    /// Stops gpsd, waits for it, and removes its directory. Idempotent. SIGKILL: nothing gpsd
    /// does on SIGTERM matters to a test, and the next test's gpsd may want the port at once.
    public func stop() {
        process.killAndWait()
        try? FileManager.default.removeItem(at: directory)
    }

    private static func launch(executable: String, device: String, port: Int) async throws -> GPSDProcess {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("trackme-gpsd-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // gpsd drops privileges to user `gpsd` after start-up: let it use its own directory.
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory.path)
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = directory.path
        let pipe = Pipe()
        let output = OutputLog()
        let process: SpawnedProcess
        do {
            process = try SpawnedProcess.launch(
                executable,
                arguments: ["-N", "-D", "3", "-S", String(port), "-F", directory.appendingPathComponent("control.sock").path, device],
                environment: environment,
                standardError: .pipe(pipe)
            )
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw GPSDTestSupportError(code: .startFailed, context: "gpsd could not be run: \(error)")
        }
        // gpsd logs "startup at" once it listens and has its control socket: wait for that line
        // rather than polling the port.
        let ready = await output.drain(pipe.fileHandleForReading, readyMarker: "gpsd:INFO: startup at")
        guard ready else {
            process.killAndWait()
            try? FileManager.default.removeItem(at: directory)
            throw GPSDTestSupportError(
                code: .startFailed,
                context: "gpsd exited before it was ready on port \(port): \(output.text)"
            )
        }
        return GPSDProcess(port: port, device: device, process: process, directory: directory, output: output)
    }

    /// A port no listener held a moment ago, outside the ephemeral range (`LoopbackPort`).
    public static func freeLoopbackPort() throws(GPSDTestSupportError) -> Int {
        do throws(SystemError) {
            return try LoopbackPort.unused()
        } catch {
            throw GPSDTestSupportError(code: .socketFailed, context: error.description)
        }
    }

    /// A TCP socket bound to 127.0.0.1 on a free port (and listening, with `listening`), and
    /// the port: what `LogFeedServer` starts from.
    static func boundLoopbackSocket(listening: Bool) throws(GPSDTestSupportError) -> (OwnedFileDescriptor, port: Int) {
        do throws(SystemError) {
            let owner = OwnedFileDescriptor(
                FileDescriptor(
                    rawValue: try SystemError.retrying("socket") { socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
                )
            )
            let fd = owner.descriptor?.rawValue ?? -1
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            try withUnsafeMutablePointer(to: &address) { (pointer) throws(SystemError) in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (generic) throws(SystemError) in
                    try SystemError.retrying("bind") { bind(fd, generic, length) }
                    if listening { try SystemError.retrying("listen") { listen(fd, 16) } }
                    try SystemError.retrying("getsockname") { getsockname(fd, generic, &length) }
                }
            }
            return (owner, Int(UInt16(bigEndian: address.sin_port)))
        } catch {
            throw GPSDTestSupportError(code: .socketFailed, context: error.description)
        }
    }
}

/// A child's stderr, drained on a thread of its own so the child never blocks on a full pipe.
final class OutputLog: Sendable {
    private struct Waiter {
        var text: String
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var lines: [String] = []
        var waiters: [Waiter] = []
        var ended = false
    }

    private let state = Mutex(State())

    var text: String { state.withLock { $0.lines.suffix(40).joined(separator: "\n") } }

    /// Waits until a line containing `text` has been written (including lines already kept);
    /// false if the output ends first.
    func waitForLine(containing text: String) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let answer = state.withLock { s -> Bool? in
                if s.lines.contains(where: { $0.contains(text) }) { return true }
                if s.ended { return false }
                s.waiters.append(Waiter(text: text, continuation: continuation))
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Reads `handle` until EOF on a thread; returns true once a line contains `readyMarker`,
    /// false if the stream ends first.
    func drain(_ handle: FileHandle, readyMarker: String) async -> Bool {
        let thread = Thread { [self] in
            var pending = ""
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                pending += String(decoding: data, as: UTF8.self)
                while let newline = pending.firstIndex(of: "\n") {
                    append(String(pending[..<newline]))
                    pending.removeSubrange(...newline)
                }
            }
            let waiters = state.withLock { s -> [Waiter] in
                s.ended = true
                defer { s.waiters = [] }
                return s.waiters
            }
            for waiter in waiters { waiter.continuation.resume(returning: false) }
        }
        thread.name = "child-stderr"
        thread.start()
        return await waitForLine(containing: readyMarker)
    }

    private func append(_ line: String) {
        let matched = state.withLock { s -> [Waiter] in
            s.lines.append(line)
            // Keep the start-up lines and the recent ones; gpsd at -D 3 writes a line per report.
            if s.lines.count > 400 { s.lines.removeSubrange(20..<220) }
            let matched = s.waiters.filter { line.contains($0.text) }
            s.waiters.removeAll { line.contains($0.text) }
            return matched
        }
        for waiter in matched { waiter.continuation.resume(returning: true) }
    }
}
