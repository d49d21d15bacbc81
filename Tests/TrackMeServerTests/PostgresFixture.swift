import Foundation
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

    private var port: Int?
    private var counter = 0

    /// A new empty database's URL.
    func createDatabase() async throws -> String {
        let port = try startIfNeeded()
        counter += 1
        let name = "trackme_\(getpid())_\(counter)"
        try Self.run("\(Self.binDirectory)/createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", name], asPostgres: false)
        return "postgres://postgres@127.0.0.1:\(port)/\(name)"
    }

    private func startIfNeeded() throws -> Int {
        if let port { return port }
        guard FileManager.default.isExecutableFile(atPath: "\(Self.binDirectory)/initdb") else {
            throw Failure(description: "PostgreSQL is not installed (no \(Self.binDirectory)/initdb): apt-get install postgresql")
        }
        let directory = "/tmp/trackme-pg-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            try Self.run("/bin/chown", ["postgres:postgres", directory], asPostgres: false)
        }
        try Self.run("\(Self.binDirectory)/initdb", ["-D", "\(directory)/data", "-A", "trust", "-U", "postgres", "--no-sync"], asPostgres: true)
        let port = try Self.freePort()
        try Self.run(
            "\(Self.binDirectory)/pg_ctl",
            [
                "-D", "\(directory)/data", "-l", "\(directory)/log", "-w", "-t", "120", "-o",
                "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300", "start",
            ], asPostgres: true)
        PostgresFixtureCleanup.dataDirectory = "\(directory)/data"
        PostgresFixtureCleanup.root = directory
        atexit {
            PostgresFixtureCleanup.stop()
        }
        self.port = port
        return port
    }

    static func run(_ executable: String, _ arguments: [String], asPostgres: Bool) throws {
        let process = Process()
        if asPostgres && getuid() == 0 {
            process.executableURL = URL(fileURLWithPath: "/sbin/runuser")
            process.arguments = ["-u", "postgres", "--", executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "\(executable) failed (\(process.terminationStatus)): \(String(decoding: data, as: UTF8.self))")
        }
    }

    /// A port nobody listens on now (bound to 0, read, released).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// What the exit hook needs; set once, before the hook is registered.
enum PostgresFixtureCleanup {
    nonisolated(unsafe) static var dataDirectory: String?
    nonisolated(unsafe) static var root: String?

    static func stop() {
        guard let dataDirectory else { return }
        try? PostgresFixture.run("\(PostgresFixture.binDirectory)/pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"], asPostgres: true)
        if let root { try? FileManager.default.removeItem(atPath: root) }
    }
}
