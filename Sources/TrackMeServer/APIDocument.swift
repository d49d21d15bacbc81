import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TrackMeCore

/// The API document, `openapi.yaml` beside this file, compiled into the binary and served byte for
/// byte at `/openapi.yaml`. It changes only with the binary: a client may keep it for five minutes
/// and then revalidate with its ETag (the SHA-256 of the bytes), which an upgrade changes.
enum APIDocument {
    static let bytes: [UInt8] = PackageResources.openapi_yaml
    static let etag = "\"" + Hex.encode(SHA256.hash(data: bytes)) + "\""

    static func response(ifNoneMatch: String?) -> Response {
        var headers = HTTPFields()
        headers[.eTag] = etag
        headers[.cacheControl] = "max-age=300"
        if let ifNoneMatch, matches(ifNoneMatch) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = "application/yaml"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// RFC 9110 13.1.2: `*`, or a list of entity tags compared weakly (a `W/` prefix is ignored).
    static func matches(_ ifNoneMatch: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }
}
