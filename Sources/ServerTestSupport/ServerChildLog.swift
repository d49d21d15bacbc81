public import Foundation
public import TrackMeSystem

/// What a `trackme-server` started as a child process by a test says in its log: the tests start
/// it with `--port 0` and learn the port from its `trackme-server listening` line
/// (`server.address=http://127.0.0.1:PORT`, or `https://`). One reader of that line for every
/// test that runs the real binary, from a log file or from a pipe.
public enum ServerChildLog {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// The port of the listening line in `text`, nil while there is none.
    public static func listeningPort(in text: some StringProtocol) -> Int? {
        for line in text.split(separator: "\n") where line.contains("trackme-server listening") {
            for prefix in ["http://127.0.0.1:", "https://127.0.0.1:"] {
                if let range = line.range(of: prefix), let port = Int(line[range.upperBound...].prefix(while: \.isNumber)) { return port }
            }
        }
        return nil
    }

    /// Reads the log file the child writes until it names its port. Throws when the child exits
    /// first (with the log), or after `limit`, a bound on a start that hangs, not a speed; a
    /// child still running then is killed, so that no caller leaves one behind.
    public static func listeningPort(logFile path: String, of child: SpawnedProcess, within limit: Duration) async throws -> Int {
        let deadline = ContinuousClock.now + limit
        do {
            while true {
                let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
                if let port = listeningPort(in: text) { return port }
                guard child.isRunning else { throw Failure(description: "trackme-server exited before listening: \(text)") }
                guard ContinuousClock.now < deadline else { throw Failure(description: "trackme-server did not listen within \(limit): \(text)") }
                try await Task.sleep(for: .milliseconds(20))
            }
        } catch {
            child.killAndWait()
            throw error
        }
    }

    /// Reads a child's log from a pipe, on a blocking thread, up to the first line that
    /// `match` maps to a value; returns it with the log read so far. Throws when the pipe ends
    /// first (the child exited). What follows that line in the same read is dropped.
    public static func firstLine<T: Sendable>(
        reading handle: FileHandle,
        _ match: @escaping @Sendable (Substring) -> T?
    ) async throws -> (value: T, text: String) {
        try await BlockingThreads.shared.run { () throws(Failure) -> (value: T, text: String) in
            var text = ""
            var partial = ""
            while true {
                let data = handle.availableData
                if data.isEmpty { throw Failure(description: "the log ended before the line looked for: \(text)") }
                let chunk = String(decoding: data, as: UTF8.self)
                text += chunk
                var lines = (partial + chunk).split(separator: "\n", omittingEmptySubsequences: false)
                partial = String(lines.removeLast())
                for line in lines {
                    if let value = match(line) { return (value, text) }
                }
            }
        }
    }

    /// Reads a child's log from a pipe until it names its port.
    public static func listeningPort(reading handle: FileHandle) async throws -> (port: Int, text: String) {
        let line = try await firstLine(reading: handle) { listeningPort(in: $0) }
        return (line.value, line.text)
    }
}
