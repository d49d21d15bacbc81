public import Foundation
import TrackMeSystem

#if canImport(Glibc)
import Glibc
#endif

/// gpsd's own regression harness, `gpsfake -1 -q -n -W 2 -P PORT LOG`, for field-like runs:
/// gpsfake starts its own gpsd on PORT and paces the log like a receiver. It can miss leading
/// fixes under load (see GPSD-NOTES.md); tests that need every fix use `GPSDFeed`.
public final class GPSFakeProcess: Sendable {
    public let port: Int
    private let process: SpawnedProcess
    private let directory: URL

    private init(port: Int, process: SpawnedProcess, directory: URL) {
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
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = directory.path
        // gpsfake runs gpsd from PATH: make sure /usr/sbin is on it.
        environment["PATH"] = (environment["PATH"].map { $0 + ":" } ?? "") + "/usr/sbin:/usr/bin"
        // gpsfake leads a process group of its own and its gpsd joins it, so stop() signals the
        // group and ends both.
        let process: SpawnedProcess
        do {
            process = try SpawnedProcess.launch(
                executable,
                arguments: ["-1", "-q", "-n", "-W", "2", "-P", String(chosen), url.path],
                environment: environment,
                directory: directory.path,
                ownProcessGroup: true
            )
        } catch {
            throw GPSDTestSupportError(code: .startFailed, context: "gpsfake could not be run: \(error)")
        }
        return GPSFakeProcess(port: chosen, process: process, directory: directory)
    }

    /// Stops gpsfake (and its gpsd) and removes its directory. Idempotent.
    public func stop() {
        // SIGKILL to the whole group (as GPSDProcess.stop()): gpsd with gpsfake.
        process.signalGroup(SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}
