import Foundation
import Testing
import TrackMeCore
import TrackMeSystem

@testable import TrackMeServer

/// Identifiers checked where they enter, path parameters decoded, `/metrics` and the database
/// file kept private.
@Suite("Edge validation")
struct EdgeValidationTests {
    @Test("an alert id with NUL or another control character is a 400, never stored truncated", arguments: Backend.enabled)
    func controlCharacters(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            for id in ["al\u{0}ert", "line\nbreak", "tab\there", "del\u{7F}", "c1\u{85}", String(repeating: "x", count: 129)] {
                let response = try await s.client.send(
                    "POST",
                    "/v1/alerts",
                    token: token,
                    body: try WireCodec.encode(Sample.alert("pi-0001", id: id))
                )
                #expect(response.status == 400, "\(id.debugDescription)")
                #expect(response.errorField == "alert.alert_id")
            }
            // `al` is a new alert, not a duplicate of a truncated `al\0ert`.
            let al = try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(Sample.alert("pi-0001", id: "al")))
            #expect(al.status == 200)
            #expect(al.object["duplicate"] as? Bool == false)
            #expect(try await s.server.store.counts().alerts == 1)
            // Non-ASCII letters are fine.
            let accented = try await s.client.send(
                "POST",
                "/v1/alerts",
                token: token,
                body: try WireCodec.encode(Sample.alert("pi-0001", id: "alerte-é-1"))
            )
            #expect(accented.status == 200)
        }
    }

    @Test("a percent-encoded alert id in the ack path is decoded; a malformed or NUL escape is a 400", arguments: Backend.enabled)
    func percentDecoding(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let token = try await s.enrol("pi-0001")
            let dispatcher = try await s.dispatcher()
            let id = "a b/c?d%e"
            #expect(
                try await s.client.send("POST", "/v1/alerts", token: token, body: try WireCodec.encode(Sample.alert("pi-0001", id: id))).status == 200
            )
            let ack = try await s.client.send("POST", "/v1/alerts/a%20b%2Fc%3Fd%25e/ack", token: dispatcher)
            #expect(ack.status == 200, "\(ack.text)")
            #expect(ack.object["alert_id"] as? String == id)
            // URLSession would re-encode a malformed escape; a raw request sends it as it is.
            let port = s.port
            let malformed = try await BlockingThreads.shared.run { () -> Int? in
                let socket = try RawSocket(port: port)
                socket.send("POST /v1/alerts/bad%zz/ack HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(dispatcher)\r\nContent-Length: 0\r\n\r\n")
                return socket.readResponse(timeout: .seconds(60))?.status
            }
            #expect(malformed == 400)
            #expect(try await s.client.send("POST", "/v1/alerts/al%00ert/ack", token: dispatcher).status == 400)
            #expect(try await s.client.send("GET", "/v1/devices/pi%2D0001/readings", token: TestServer.adminToken).status == 200)
        }
    }

    @Test("the SQLite database file is created 0600, and an existing world-readable one is narrowed")
    func databaseFileMode() async throws {
        try await TestServer.with(.sqlite) { s in
            guard case .sqlite(let path) = s.server.configuration.storage else { return }
            for file in [path, path + "-wal"] {
                let mode = try #require(try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int)
                #expect(mode & 0o777 == 0o600, "\(file) is \(String(mode, radix: 8))")
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-mode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("old.sqlite").path
        #expect(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644]))
        try PrivateFile.prepareDatabase(at: path)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode & 0o777 == 0o600)
    }

    /// The first IPv4 address of an interface that is up and not loopback.
    static func nonLoopbackIPv4() -> String? {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
                entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK) == 0, entry.pointee.ifa_flags & UInt32(IFF_UP) != 0
            else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            guard getnameinfo(address, socklen_t(MemoryLayout<sockaddr_in>.size), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 else {
                continue
            }
            return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return nil
    }
}
