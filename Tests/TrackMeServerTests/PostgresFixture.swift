import Foundation
import TrackMeSystem

#if canImport(Glibc)
import Glibc
#endif

/// A real PostgreSQL 15 for the test process: `initdb` in a temp dir, `pg_ctl start` on a free
/// loopback port (as the `postgres` user when running as root: PostgreSQL refuses root), one
/// database per test, stopped when the process exits. Fails loudly if PostgreSQL is missing.
actor PostgresFixture {
    static let shared = PostgresFixture()
    static let binDirectory = ProcessInfo.processInfo.environment["TRACKME_PG_BIN"] ?? "/usr/lib/postgresql/15/bin"

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private var starting: Task<Int, any Error>?
    private var counter = 0

    /// A new empty database's URL.
    func createDatabase() async throws -> String {
        let port = try await startIfNeeded()
        counter += 1
        let name = "trackme_\(getpid())_\(counter)"
        try await Self.run("\(Self.binDirectory)/createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", name], asPostgres: false)
        return "postgres://postgres@127.0.0.1:\(port)/\(name)"
    }

    /// One server for the whole test process, however many tests ask at once.
    private func startIfNeeded() async throws -> Int {
        if let starting { return try await starting.value }
        let task = Task { try await Self.start() }
        starting = task
        return try await task.value
    }

    private static func start() async throws -> Int {
        let (port, directory) = try await launch()
        PostgresFixtureCleanup.dataDirectory = "\(directory)/data"
        PostgresFixtureCleanup.root = directory
        atexit {
            PostgresFixtureCleanup.stop()
        }
        return port
    }

    /// A PostgreSQL of the caller's own, for a test that stops it (the shared one
    /// serves every other test). The caller stops it with `stopPrivate`.
    static func startPrivate() async throws -> PrivateServer {
        let (port, directory) = try await launch()
        let server = PrivateServer(port: port, directory: directory)
        try await run("\(binDirectory)/createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "trackme"], asPostgres: false)
        return server
    }

    struct PrivateServer: Sendable {
        var port: Int
        var directory: String
        var url: String { "postgres://postgres@127.0.0.1:\(port)/trackme" }

        func stop() async throws {
            try await PostgresFixture.run(
                "\(PostgresFixture.binDirectory)/pg_ctl",
                ["-D", "\(directory)/data", "-m", "immediate", "-w", "stop"],
                asPostgres: true
            )
        }

        func remove() {
            PostgresFixture.runBlocking("\(PostgresFixture.binDirectory)/pg_ctl", ["-D", "\(directory)/data", "-m", "immediate", "-w", "stop"])
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Starts the initialised cluster in `directory` on a port of its own (with `settings`, more
    /// `-c name=value` options) and returns the port. A port chosen here may still be taken by
    /// another listener before PostgreSQL binds it; PostgreSQL then says so in its log, and
    /// another port is tried.
    static func startCluster(directory: String, settings: String = "-c max_connections=1000") async throws -> Int {
        var attempt = 0
        while true {
            attempt += 1
            let port = try LoopbackPort.unused()
            do {
                try await run(
                    "\(Self.binDirectory)/pg_ctl",
                    [
                        "-D", "\(directory)/data", "-l", "\(directory)/log", "-w", "-t", "120", "-o",
                        "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off \(settings)", "start",
                    ],
                    asPostgres: true
                )
                return port
            } catch {
                let log = (try? String(contentsOfFile: "\(directory)/log", encoding: .utf8)) ?? ""
                guard attempt < 5, log.contains("Address already in use") else { throw error }
                try? FileManager.default.removeItem(atPath: "\(directory)/log")
            }
        }
    }

    private static func launch() async throws -> (port: Int, directory: String) {
        guard FileManager.default.isExecutableFile(atPath: "\(Self.binDirectory)/initdb") else {
            throw Failure(description: "PostgreSQL is not installed (no \(Self.binDirectory)/initdb): apt-get install postgresql")
        }
        let directory = "/tmp/trackme-pg-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            try await run("/bin/chown", ["postgres:postgres", directory], asPostgres: false)
        }
        try await run("\(Self.binDirectory)/initdb", ["-D", "\(directory)/data", "-A", "trust", "-U", "postgres", "--no-sync"], asPostgres: true)
        return (try await startCluster(directory: directory), directory)
    }

    /// Runs a program to its end with stdin from /dev/null and its output to a file, through
    /// `SpawnedProcess`, which gives the child no descriptor but those: `pg_ctl start` leaves
    /// the server running with whatever it inherited, and a pipe another test's thread had open
    /// would then never see its end.
    static func run(_ executable: String, _ arguments: [String], asPostgres: Bool) async throws {
        let argv = asPostgres && getuid() == 0 ? ["/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-pg-out-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let ending = try await SpawnedProcess.launch(
            argv[0],
            arguments: Array(argv.dropFirst()),
            standardOutput: .file(outputPath),
            standardError: .file(outputPath)
        ).exit()
        guard ending == .exited(0) else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw Failure(description: "\(argv.joined(separator: " ")) failed (\(ending)): \(text)")
        }
    }

    static func runBlocking(_ executable: String, _ arguments: [String]) {
        let argv = getuid() == 0 ? ["/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        _ = try? SpawnedProcess.launch(argv[0], arguments: Array(argv.dropFirst())).waitUntilExit()
    }
}

/// What the exit hook needs; set once, before the hook is registered.
enum PostgresFixtureCleanup {
    nonisolated(unsafe) static var dataDirectory: String?
    nonisolated(unsafe) static var root: String?

    static func stop() {
        guard let dataDirectory else { return }
        PostgresFixture.runBlocking("\(PostgresFixture.binDirectory)/pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"])
        if let root { try? FileManager.default.removeItem(atPath: root) }
    }
}
