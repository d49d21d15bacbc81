import Foundation
import Testing
import Yams

/// The API document is the file in the source tree, served byte for byte, and a mapping that
/// every YAML reader reads the same way (no key twice, so no operation silently lost).
@Suite("The API document", .timeLimit(.minutes(10)))
struct APIDocumentTests {
    static let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/TrackMeServer/openapi.yaml")

    @Test("/openapi.yaml is the file, with no duplicate key, every route's operations kept, and an ETag")
    func servedAsTheFile() async throws {
        try await TestServer.with(.sqlite) { s in
            let served = try await s.client.send("GET", "/openapi.yaml")
            #expect(served.status == 200)
            #expect(served.headers["content-type"] == "application/yaml")
            #expect(served.body == (try Data(contentsOf: Self.file)))

            // Yams' composer refuses a mapping with a key twice (the other readers keep the last).
            let document = try #require(try Yams.compose(yaml: served.text)?.mapping)
            let paths = try #require(document["paths"]?.mapping)
            #expect(try #require(paths["/v1/alerts"]?.mapping).keys.compactMap(\.string).sorted() == ["get", "post"])
            #expect(try #require(paths["/v1/devices"]?.mapping).keys.compactMap(\.string).sorted() == ["get", "post"])

            let etag = try #require(served.headers["etag"])
            #expect(served.headers["cache-control"] == "max-age=300")
            let again = try await s.client.send("GET", "/openapi.yaml", headers: ["If-None-Match": etag])
            #expect(again.status == 304)
            #expect(again.body.isEmpty)
            let stale = try await s.client.send("GET", "/openapi.yaml", headers: ["If-None-Match": "\"0\""])
            #expect(stale.status == 200)
            #expect(stale.body == served.body)
        }
    }

    @Test("a document with a key twice is refused by the reader the test uses")
    func duplicateKeysAreFound() throws {
        let twice = "paths:\n  /v1/alerts:\n    post: {}\n  /v1/alerts:\n    get: {}\n"
        #expect(throws: (any Error).self) { try Yams.compose(yaml: twice) }
    }
}
