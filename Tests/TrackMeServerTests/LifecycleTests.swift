import Foundation
import Logging
import Testing

@testable import TrackMeServer

@Suite("Lifecycle and configuration")
struct LifecycleTests {
    @Test("a graceful shutdown ends open feed streams instead of waiting for them", .timeLimit(.minutes(10)), arguments: Backend.enabled)
    func shutdownWithOpenStream(backend: Backend) async throws {
        let s = try await TestServer.start(backend)
        let dispatcher = try await s.dispatcher()
        let feed = try SSETestClient(port: s.port, token: dispatcher)
        var connected = false
        for await item in feed.items {
            if case .status(200) = item {
                connected = true
                break
            }
        }
        #expect(connected)
        // stop() records an issue if the server does not end cleanly.
        await s.stop()
        // The stream ends: the reader sees the end of the body, not a hang.
        for await _ in feed.items {}
        feed.close()
    }

    @Test(
        "--db arguments",
        arguments: [
            ("sqlite:/var/lib/trackme/s.sqlite", StorageLocation.sqlite(path: "/var/lib/trackme/s.sqlite")),
            ("/tmp/x.sqlite", .sqlite(path: "/tmp/x.sqlite")),
            ("postgres://u:p@db:5432/trackme", .postgres(url: "postgres://u:p@db:5432/trackme")),
            ("postgresql://db/trackme", .postgres(url: "postgresql://db/trackme")),
        ]
    )
    func storageArgument(argument: String, expected: StorageLocation) {
        #expect(StorageLocation(argument: argument) == expected)
    }

    @Test("logs never show a database password, and the default SQLite file follows XDG")
    func redactionAndDefaults() {
        #expect(!StorageLocation.postgres(url: "postgres://u:secret@db:5432/trackme").description.contains("secret"))
        #expect(StorageLocation.defaultSQLite(environment: ["XDG_DATA_HOME": "/data"]) == .sqlite(path: "/data/trackme/server.sqlite"))
        #expect(StorageLocation.defaultSQLite(environment: ["HOME": "/home/pi"]) == .sqlite(path: "/home/pi/.local/share/trackme/server.sqlite"))
    }

    #if !PostgreSQL
    @Test("a build without the PostgreSQL trait refuses a postgres URL with a clear error")
    func postgresWithoutTrait() async throws {
        await #expect(throws: StoreError.self) {
            _ = try await TrackMeServer(
                configuration: ServerConfiguration(port: 0, storage: .postgres(url: "postgres://localhost/x")),
                logger: .init(label: "t")
            )
        }
    }
    #endif
}
