import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TrackMeCore

/// The pages: the dispatcher console at `/` with its script and settings, the stylesheet every
/// page shares, Leaflet from Debian's `libjs-leaflet` when installed, and `serve`, with which
/// every room serves its own pages under the same headers. Everything is served by this server;
/// nothing comes from a CDN. The Content-Security-Policy allows scripts and styles from this
/// origin only, so even a name that slipped through as markup could not run.
struct PagesRoom: Sendable {
    static let access: [String: RouteAccess.Requirement] = [
        "GET /": .open, "GET /assets/trackme.css": .open, "GET /assets/console.js": .open, "GET /assets/leaflet/**": .open,
        "GET /v1/console/config": .open,
    ]

    let console: ConsoleConfiguration

    func routes(authenticator: Authenticator) -> RouteCollection<ServerRequestContext> {
        let routes = RouteCollection(context: ServerRequestContext.self)
        let doors = RouteAccess.Doors(routes: routes, mountedAt: "", access: Self.access, authenticator: authenticator)
        doors.on(.get, "/") { request, _ in serve(WebPages.console, request) }
        doors.on(.get, "/assets/console.js") { request, _ in serve(WebPages.consoleScript, request) }
        doors.on(.get, "/assets/trackme.css") { request, _ in serve(WebPages.stylesheet, request) }
        doors.on(.get, "/assets/leaflet/**") { _, context in try leaflet(context.parameters.getCatchAll().joined(separator: "/")) }
        doors.on(.get, "/v1/console/config") { _, _ in
            try json(
                .ok,
                ConsoleSettings(tileURL: console.tileURL, leaflet: leafletAvailable, feedHeartbeatMilliseconds: console.feedHeartbeat.milliseconds)
            )
        }
        return routes
    }

    var leafletAvailable: Bool { FileManager.default.fileExists(atPath: console.leafletDirectory + "/leaflet.js") }

    /// The tile server's origin, which the page's policy must let images come from.
    var tileOrigin: String? {
        guard let tileURL = console.tileURL,
            let components = URLComponents(string: tileURL.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: "")),
            let scheme = components.scheme, let host = components.host
        else { return nil }
        return "\(scheme)://\(host)\(components.port.map { ":\($0)" } ?? "")"
    }

    /// A page, script or stylesheet of `WebPages` under the pages' policy. Browsers revalidate
    /// each time (`no-cache`) and get a 304 without a body until an upgrade changes the file.
    func serve(_ file: EmbeddedFile, _ request: Request) -> Response {
        var headers = HTTPFields()
        headers[.contentSecurityPolicy] =
            "default-src 'self'; img-src 'self' data:\(tileOrigin.map { " " + $0 } ?? ""); style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
        headers[.xContentTypeOptions] = "nosniff"
        headers[.referrerPolicy] = "no-referrer"
        return file.response(ifNoneMatch: request.headers[.ifNoneMatch], headers: headers, cacheControl: "no-cache")
    }

    /// A file of the Leaflet distribution: only plain relative names (no `..`, no hidden files).
    func leaflet(_ path: String) throws -> Response {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        let plain =
            !parts.isEmpty
            && parts.allSatisfy { part in
                !part.isEmpty && !part.hasPrefix(".")
                    && part.utf8.allSatisfy { byte in
                        switch byte {
                        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
                        case UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"): true
                        default: false
                        }
                    }
            }
        guard plain, let data = FileManager.default.contents(atPath: console.leafletDirectory + "/" + path) else {
            throw APIError.notFound("no asset \(path)")
        }
        let type: String =
            switch (path as NSString).pathExtension {
            case "js": "text/javascript; charset=utf-8"
            case "css": "text/css; charset=utf-8"
            case "png": "image/png"
            case "svg": "image/svg+xml"
            default: "application/octet-stream"
            }
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.cacheControl] = "max-age=3600"
        headers[.xContentTypeOptions] = "nosniff"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}

struct ConsoleSettings: Codable, Sendable {
    var tileURL: String?
    var leaflet: Bool
    /// How often the feed sends a heartbeat: the page's measure of a dead connection.
    var feedHeartbeatMilliseconds: Int64

    enum CodingKeys: String, CodingKey {
        case tileURL = "tile_url"
        case leaflet
        case feedHeartbeatMilliseconds = "feed_heartbeat_ms"
    }
}

extension HTTPField.Name {
    static let xContentTypeOptions = HTTPField.Name("X-Content-Type-Options") ?? .contentLocation
    static let referrerPolicy = HTTPField.Name("Referrer-Policy") ?? .contentLocation
}
