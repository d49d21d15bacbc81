public import Foundation

/// gpsd's own regression harness, `gpsfake -1 -q -n -W 2 -P PORT LOG`, for field-like runs:
/// gpsfake starts its own gpsd on PORT and paces the log like a receiver. It can miss leading
/// fixes under load (see GPSD-NOTES.md); tests that need every fix use `GPSDFeed`.
public final class GPSFakeProcess: Sendable {
    public let port: Int
    private let process: ProcessBox
    private let directory: URL

    private init(port: Int, process: ProcessBox, directory: URL) {
        self.port = port
        self.process = process
        self.directory = directory
    }

    deinit {
        stop()
    }

    /// Starts gpsfake on `log`. `-1` plays the log once, `-n` starts gpsd at once (no client
    /// can miss the first fixes waiting for it), `-W 2` exits 2 s after the end (so a client
    /// sees gpsd close). gpsfake listens shortly after start: the reader's reconnect covers that.
    public static func start(log url: URL, port: Int? = nil) throws -> GPSFakeProcess {
        let executable = try ExternalProgram.path(of: "gpsfake")
        _ = try ExternalProgram.path(of: "gpsd")
        let chosen = try port ?? GPSDProcess.freeLoopbackPort()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("trackme-gpsfake-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory.path)
        let process = Process()
        // Foundation starts the child as the leader of a process group of its own; gpsfake's gpsd
        // joins it, so stop() signals the group and ends both.
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-1", "-q", "-n", "-W", "2", "-P", String(chosen), url.path]
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = directory.path
        // gpsfake runs gpsd from PATH: make sure /usr/sbin is on it.
        environment["PATH"] = (environment["PATH"].map { $0 + ":" } ?? "") + "/usr/sbin:/usr/bin"
        process.environment = environment
        process.currentDirectoryURL = directory
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw GPSDTestSupportError(code: .startFailed, context: "gpsfake could not be run: \(error)")
        }
        return GPSFakeProcess(port: chosen, process: ProcessBox(process), directory: directory)
    }

    /// Stops gpsfake (and its gpsd) and removes its directory. Idempotent.
    public func stop() {
        // SIGKILL to the whole group: see GPSDProcess.stop() for why not SIGTERM.
        process.signalGroup(SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }
}
