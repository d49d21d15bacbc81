#if PostgreSQL
import Foundation
import Logging
import PostgresNIO
import Testing
import TrackMeCore
#if canImport(Glibc)
import Glibc
#endif
@testable import TrackMeServer

/// A second real PostgreSQL for this process with `ssl=on` and a certificate from a CA the test
/// makes, for `sslmode=verify-full`.
actor PostgresTLSFixture {
    static let shared = PostgresTLSFixture()

    struct Server: Sendable {
        var port: Int
        var ca: TestCertificateAuthority
        var otherCA: TestCertificateAuthority
        var directory: String
    }

    private var starting: Task<Server, any Error>?

    func server() async throws -> Server {
        if let starting { return try await starting.value }
        let task = Task { try await Self.start() }
        starting = task
        return try await task.value
    }

    private static func start() async throws -> Server {
        let bin = PostgresFixture.binDirectory
        let directory = "/tmp/trackme-pgtls-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let certificates = URL(fileURLWithPath: directory).appendingPathComponent("certs")
        try FileManager.default.createDirectory(at: certificates, withIntermediateDirectories: true)
        let ca = try await TestCertificateAuthority.make("pg", in: certificates)
        let otherCA = try await TestCertificateAuthority.make("pg-other", in: certificates)
        let (certificate, key) = try await ca.issue("postgres", names: ["localhost"])
        if getuid() == 0 {
            try await PostgresFixture.run("/bin/chown", ["-R", "postgres:postgres", directory], asPostgres: false)
        }
        try await PostgresFixture.run("/bin/chmod", ["0600", key], asPostgres: false)
        try await PostgresFixture.run("\(bin)/initdb", ["-D", "\(directory)/data", "-A", "trust", "-U", "postgres", "--no-sync"], asPostgres: true)
        let port = try await PostgresFixture.startCluster(
            directory: directory,
            settings: "-c ssl=on -c ssl_cert_file=\(certificate) -c ssl_key_file=\(key)"
        )
        PostgresTLSCleanup.dataDirectory = "\(directory)/data"
        atexit { PostgresTLSCleanup.stop() }
        return Server(port: port, ca: ca, otherCA: otherCA, directory: directory)
    }
}

enum PostgresTLSCleanup {
    nonisolated(unsafe) static var dataDirectory: String?

    static func stop() {
        guard let dataDirectory else { return }
        PostgresFixture.runBlocking("\(PostgresFixture.binDirectory)/pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: (dataDirectory as NSString).deletingLastPathComponent)
    }
}

@Suite("PostgreSQL over TLS", .timeLimit(.minutes(10)))
struct PostgresTLSTests {
    @Test("sslmode=verify-full with the server's CA: the store works, and the session is encrypted")
    func verifyFull() async throws {
        let pg = try await PostgresTLSFixture.shared.server()
        let url = "postgres://postgres@localhost:\(pg.port)/postgres?sslmode=verify-full&sslrootcert=\(pg.ca.certificatePath)"
        let store = try await PostgresServerStore(url: url, logger: Logger(label: "test.pgtls"))
        do {
            try await store.migrate()
            // A write and its read back over the encrypted session, not only a connection.
            let before = try await store.counts().devices
            _ = try await ServerAdministration(store: store, wallClock: { 1_795_000_000_000 })
                .enrolDevice(deviceID: "tls-\(UUID().uuidString.prefix(8))", person: PersonProfile(name: "Ada", age: 70))
            #expect(try await store.counts().devices == before + 1)
            var encrypted: [Bool] = []
            for try await ssl in try await store.client.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").decode(Bool.self) {
                encrypted.append(ssl)
            }
            #expect(encrypted == [true])
        } catch {
            Issue.record(error)
        }
        try await store.close()
    }

    @Test("verify-full refuses a server whose certificate another CA signed, or whose name is not the host", arguments: ["other-ca", "wrong-name"])
    func refused(case name: String) async throws {
        let pg = try await PostgresTLSFixture.shared.server()
        let url =
            name == "other-ca"
            ? "postgres://postgres@localhost:\(pg.port)/postgres?sslmode=verify-full&sslrootcert=\(pg.otherCA.certificatePath)"
            // 127.0.0.1 is not a name in the certificate (it says localhost only).
            : "postgres://postgres@127.0.0.1:\(pg.port)/postgres?sslmode=verify-full&sslrootcert=\(pg.ca.certificatePath)"
        var logger = Logger(label: "test.pgtls")
        logger.logLevel = .critical
        let store = try await PostgresServerStore(url: url, logger: logger)
        let outcome = await Task {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await store.migrate()
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(20))  // an upper bound, not a wait for the result
                    return false
                }
                defer { group.cancelAll() }
                return try await group.next() ?? false
            }
        }.result
        switch outcome {
        case .success(let connected): #expect(!connected, "connected, or hung past 20 s")
        case .failure: break  // refused: what we want
        }
        try await store.close()
    }

    @Test("an sslmode that encrypts without checking the server is refused at start", arguments: ["require", "prefer", "allow"])
    func weakModes(mode: String) async throws {
        await #expect(throws: StoreError.self) {
            _ = try await PostgresServerStore(url: "postgres://postgres@localhost:5432/x?sslmode=\(mode)", logger: Logger(label: "t"))
        }
    }
}
#endif
