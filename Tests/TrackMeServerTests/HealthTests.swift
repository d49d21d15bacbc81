import Foundation
import GRDB
import Testing
import TrackMeCore

@testable import TrackMeServer

#if canImport(Glibc)
import Glibc
#endif

/// `/health` says `ok` only when the database answers and a write would succeed; what went wrong
/// is named, counted in `/metrics`, and a damaged database is a 503, never a 500 `internal`.
@Suite("Health")
struct HealthTests {
    /// A 4 MiB tmpfs of the test's own (mounting needs root, as CI runs).
    static func mountTmpfs() async throws -> String {
        let directory = "/tmp/trackme-full-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        do {
            try await PostgresFixture.run("/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", directory], asPostgres: false)
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw TestFailure(description: "cannot mount a tmpfs at \(directory): this test needs root, as CI runs (\(error))")
        }
        return directory
    }

    static func unmount(_ directory: String) async {
        try? await PostgresFixture.run("/bin/umount", [directory], asPostgres: false)
        try? FileManager.default.removeItem(atPath: directory)
    }

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
    }

    @Test("on a full disk /health is 503 degraded naming free space, metrics say not writable; room again, ok again")
    func fullDisk() async throws {
        let mountPoint = try await Self.mountTmpfs()
        let s: TestServer
        do {
            s = try await TestServer.start(
                .sqlite,
                storage: .sqlite(path: "\(mountPoint)/server.sqlite"),
                configure: { $0.minimumFreeBytes = 256 << 10 }
            )
        } catch {
            await Self.unmount(mountPoint)
            throw error
        }
        let filler = "\(mountPoint)/filler"
        do {
            let before = try await s.client.send("GET", "/health")
            #expect(before.status == 200, "\(before.text)")
            #expect(before.object["status"] as? String == "ok")
            // Everything the file system has left, taken by another file.
            let fd = open(filler, O_WRONLY | O_CREAT, 0o600)
            try #require(fd >= 0)
            let chunk = [UInt8](repeating: 0x41, count: 64 << 10)
            while chunk.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
            close(fd)
            let full = try await s.client.send("GET", "/health")
            #expect(full.status == 503, "\(full.text)")
            #expect(full.object["status"] as? String == "degraded")
            let reasons = try #require(full.object["reasons"] as? [String])
            #expect(reasons.contains { $0.contains("free space") }, "\(reasons)")
            let metrics = MetricsScrape(try await s.client.send("GET", "/metrics").text)
            #expect(metrics.value("trackme_server_database_writable") == 0)
            #expect(metrics.value("trackme_server_database_answering") == 1)
            #expect(metrics.value("trackme_server_database_free_bytes") != nil)
            try FileManager.default.removeItem(atPath: filler)
            let again = try await s.client.send("GET", "/health")
            #expect(again.status == 200, "\(again.text)")
            #expect(MetricsScrape(try await s.client.send("GET", "/metrics").text).value("trackme_server_database_writable") == 1)
        } catch {
            await s.stop()
            await Self.unmount(mountPoint)
            throw error
        }
        await s.stop()
        await Self.unmount(mountPoint)
    }

    #if PostgreSQL
    @Test("with PostgreSQL stopped /health is 503 degraded saying it does not answer, and /metrics still answers with it")
    func postgresStopped() async throws {
        let postgres = try await PostgresFixture.startPrivate()
        defer { postgres.remove() }
        // The server's own probe limit: a stopped PostgreSQL may never answer, and the limit is
        // what turns that into a 503.
        let probeLimit: (inout ServerConfiguration) -> Void = { $0.healthProbeTimeout = ServerConfiguration.defaultHealthProbeTimeout }
        let s = try await TestServer.start(.postgres, storage: .postgres(url: postgres.url), configure: probeLimit)
        do {
            #expect(try await s.client.send("GET", "/health").status == 200)
            try await postgres.stop()
            let down = try await s.client.send("GET", "/health")
            #expect(down.status == 503, "\(down.text)")
            #expect(down.object["status"] as? String == "degraded")
            let reasons = try #require(down.object["reasons"] as? [String])
            #expect(reasons.contains { $0.contains("PostgreSQL does not answer") || $0.contains("did not answer") }, "\(reasons)")
            let metrics = try await s.client.send("GET", "/metrics")
            #expect(metrics.status == 200)
            #expect(MetricsScrape(metrics.text).value("trackme_server_database_answering") == 0)
        } catch {
            await s.stop()
            throw error
        }
        await s.stop()
    }
    #endif

    @Test("a page damaged while the server runs: the request that meets it is 503 database_damaged, and /health says so from then on")
    func damagedWhileRunning() async throws {
        let s = try await TestServer.start(.sqlite)
        do {
            let token = try await s.enrol("pi-0001")
            // Enough readings for the table to span many pages.
            for chunk in 0..<6 {
                let readings = (1...500).map { Sample.heartRate(seq: Int64(chunk * 500 + $0)) }
                #expect(try await s.send(Sample.batch("pi-0001", seq: Int64(chunk + 1), readings: readings), token: token).status == 200)
            }
            guard case .sqlite(let path) = s.server.configuration.storage else { return }
            let store = try #require(s.server.store as? SQLiteServerStore)
            // Everything into the main file, then one page in the middle of it scribbled over.
            _ = try await store.pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
            let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            let handle = try #require(FileHandle(forWritingAtPath: path))
            try handle.seek(toOffset: UInt64((size / 4096 / 2) * 4096))
            handle.write(Data(repeating: 0x5A, count: 4096))
            try handle.close()
            // A write makes every reader drop the pages it held.
            _ = try await s.send(Sample.batch("pi-0001", seq: 7, readings: [Sample.heartRate(seq: 4000)]), token: token)
            let read = try await s.client.send("GET", "/v1/devices/pi-0001/readings?after_seq=0&limit=1000", token: TestServer.adminToken)
            var statuses = [read.status]
            var page = read
            var after = 1000
            while page.status == 200, after < 3000 {
                page = try await s.client.send("GET", "/v1/devices/pi-0001/readings?after_seq=\(after)&limit=1000", token: TestServer.adminToken)
                statuses.append(page.status)
                after += 1000
            }
            #expect(statuses.last == 503, "\(statuses) \(page.text)")
            #expect(page.errorCode == "database_damaged")
            #expect(!statuses.contains(500))
            let health = try await s.client.send("GET", "/health")
            #expect(health.status == 503)
            #expect(health.object["status"] as? String == "database_damaged")
        } catch {
            await s.stop()
            throw error
        }
        await s.stop()
    }
}
