import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TrackMeCore

/// A file compiled into the binary and served byte for byte. It changes only with the binary, so
/// its ETag is the SHA-256 of its bytes: a browser keeps it and revalidates each time, and gets a
/// 304 with no body until an upgrade changes it.
struct EmbeddedFile: Sendable {
    let bytes: [UInt8]
    let type: String
    let etag: String

    init(_ bytes: [UInt8], type: String) {
        self.bytes = bytes
        self.type = type
        self.etag = "\"" + Hex.encode(SHA256.hash(data: bytes)) + "\""
    }

    /// RFC 9110 13.1.2: `*`, or a list of entity tags compared weakly (a `W/` prefix is ignored).
    func matches(_ ifNoneMatch: String?) -> Bool {
        guard let ifNoneMatch else { return false }
        return ifNoneMatch.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }

    /// 200 with the bytes, or 304 when the request already holds them; `headers` are added to both.
    func response(ifNoneMatch: String?, headers extra: HTTPFields = HTTPFields(), cacheControl: String) -> Response {
        var headers = extra
        headers[.eTag] = etag
        headers[.cacheControl] = cacheControl
        if matches(ifNoneMatch) { return Response(status: .notModified, headers: headers) }
        headers[.contentType] = type
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}

/// The pages people use and their one stylesheet, all files beside their rooms' code. Every page
/// is `Pages/head.html` (the stylesheet, the page's title and its one script) followed by the
/// page's own body file, so a page is added with its body and script files (listed under the
/// target's `resources` in Package.swift), one `WebPages.page` line below and a route serving
/// it with `PagesRoom.serve`.
enum WebPages {
    static let stylesheet = EmbeddedFile(PackageResources.trackme_css, type: "text/css; charset=utf-8")

    /// The wearer's protection state as badges, shared by the console's device list and the
    /// carer's page.
    static let protectionScript = script(PackageResources.protection_js)
    static let console = page(title: "TrackMe console", script: "console", shared: ["protection"], body: PackageResources.console_html)
    static let consoleScript = script(PackageResources.console_js)
    static let people = page(title: "TrackMe — my data", script: "people", shared: ["protection"], body: PackageResources.people_html)
    static let peopleScript = script(PackageResources.people_js)
    static let fleet = page(title: "TrackMe fleet", script: "fleet", body: PackageResources.fleet_html)
    static let fleetScript = script(PackageResources.fleet_js)
    static let race = page(title: "Live race", script: "race", body: PackageResources.race_html)
    static let raceScript = script(PackageResources.race_js)
    static let runs = page(title: "Runs", script: "runs", body: PackageResources.runs_html)
    static let runsScript = script(PackageResources.runs_js)
    static let organise = page(title: "Organise a run", script: "organise", body: PackageResources.organise_html)
    static let organiseScript = script(PackageResources.organise_js)
    static let account = page(title: "TrackMe account", script: "account", body: PackageResources.account_html)
    static let accountScript = script(PackageResources.account_js)
    static let contact = page(title: "TrackMe alert", script: "contact", body: PackageResources.contact_html)
    static let contactScript = script(PackageResources.contact_js)

    /// The shared head with `title` and the scripts (asset names under /assets/: the `shared`
    /// ones, then the page's own `script`, run in that order) filled in, then `body`.
    static func page(title: String, script: String, shared: [String] = [], body: [UInt8]) -> EmbeddedFile {
        let scripts = (shared + [script]).map { "<script src=\"/assets/\($0).js\" defer></script>" }.joined(separator: "\n")
        let head = String(decoding: PackageResources.head_html, as: UTF8.self)
            .replacingOccurrences(of: "{{title}}", with: title)
            .replacingOccurrences(of: "{{scripts}}", with: scripts)
        return EmbeddedFile(Array(head.utf8) + body, type: "text/html; charset=utf-8")
    }

    static func script(_ bytes: [UInt8]) -> EmbeddedFile {
        EmbeddedFile(bytes, type: "text/javascript; charset=utf-8")
    }
}
