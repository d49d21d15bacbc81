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

    /// Runs a program to its end on a kept thread (`BlockingThreads`, never the cooperative pool),
    /// with stdin from /dev/null, output to a file, and every other descriptor closed:
    /// `pg_ctl start` leaves the server running with whatever it inherited, and Foundation's
    /// `Process` would then wait for its end forever.
    static func run(_ executable: String, _ arguments: [String], asPostgres: Bool) async throws {
        let argv = asPostgres && getuid() == 0 ? ["/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-pg-out-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let status = await BlockingThreads.shared.run { spawnAndWait(argv, outputPath: outputPath) }
        guard status == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw Failure(description: "\(argv.joined(separator: " ")) failed (\(status)): \(text)")
        }
    }

    static func runBlocking(_ executable: String, _ arguments: [String]) {
        let argv = getuid() == 0 ? ["/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        _ = spawnAndWait(argv, outputPath: "/dev/null")
    }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddCloseFrom.self)
    }

    /// posix_spawn + waitpid; the exit status, or -1 if it could not start.
    private static func spawnAndWait(_ argv: [String], outputPath: String) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // No inherited descriptors: the child closes every one above stderr as it starts. Marking
        // them close-on-exec here first was racy: a pipe another test's thread opened between the
        // marking and the spawn went to the PostgreSQL daemon, which then held its write end for
        // good, and that test's read of its `openssl` output never saw the end (the hang seen
        // in `make test`: a `TestCertificateAuthority.run` blocked while `openssl` was a zombie).
        // (glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`, which Swift's Glibc module
        // does not export.)
        guard let addCloseFrom = Self.addCloseFrom, addCloseFrom(&actions, 3) == 0 else { return -1 }
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, &cArguments, environ)
        guard spawned == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        // WIFEXITED / WEXITSTATUS are macros: exited normally when the low 7 bits are 0.
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
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
