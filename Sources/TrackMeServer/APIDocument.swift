import HTTPTypes
import Hummingbird

/// The API document, `openapi.yaml` beside this file, compiled into the binary and served byte for
/// byte at `/openapi.yaml`. It changes only with the binary: a client may keep it for five minutes
/// and then revalidate with its ETag (the SHA-256 of the bytes), which an upgrade changes.
enum APIDocument {
    static let file = EmbeddedFile(PackageResources.openapi_yaml, type: "application/yaml")

    static func response(ifNoneMatch: String?) -> Response {
        file.response(ifNoneMatch: ifNoneMatch, cacheControl: "max-age=300")
    }
}
