import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import TrackMeCore

/// The contact's page: `GET /contact/{token}` shows the alert, `POST` confirms receipt once
/// (which acknowledges the alert). Server-rendered, every value HTML-escaped, no script.
struct ContactRoutes: Sendable {
    let api: ServerAPI

    var escalation: ContactEscalation {
        ContactEscalation(
            store: api.store,
            console: api.configuration.console,
            wallClock: api.configuration.wallClock,
            clock: api.configuration.clock,
            logger: api.logger
        )
    }

    func register(on router: Router<ServerRequestContext>) {
        router.get("/contact/:token") { _, context in try await show(context.parameters.get("token") ?? "") }
        router.post("/contact/:token") { _, context in try await confirm(context.parameters.get("token") ?? "") }
    }

    func show(_ token: String) async throws -> Response {
        switch try await escalation.check(token: token) {
        case .forged: return page(.forbidden, "This link is not valid.", body: "")
        case .expired: return page(.gone, "This link has expired.", body: "<p>Call the emergency number if help is still needed.</p>")
        case .used: return page(.gone, "Receipt already confirmed.", body: "<p>This link has been used.</p>")
        case .valid(_, let row, let contact):
            let person: PersonProfile? = try? StoreJSON.decode(row.person)
            let record = try? WireCodec.decode(AlertRecord.self, from: Data(row.record.utf8))
            var body = "<p>\(escape(contact?.name ?? "")), \(escape(person?.name ?? row.deviceID)) needs help: "
            body += "<strong>\(escape((record?.kind.rawValue ?? "alert").replacingOccurrences(of: "_", with: " ")))</strong>.</p>"
            if let fix = record?.position?.fix, let lat = fix.latitude, let lon = fix.longitude {
                body += "<p>Last known position: \(String(format: "%.5f, %.5f", lat, lon))</p>"
            }
            body += "<form method=\"post\"><button type=\"submit\" id=\"confirm\">I received this alert</button></form>"
            return page(.ok, "TrackMe alert", body: body)
        }
    }

    func confirm(_ token: String) async throws -> Response {
        switch try await escalation.check(token: token) {
        case .forged: return page(.forbidden, "This link is not valid.", body: "")
        case .expired: return page(.gone, "This link has expired.", body: "")
        case .used: return page(.gone, "Receipt already confirmed.", body: "<p>This link has been used.</p>")
        case .valid(let notification, let row, let contact):
            let now = api.configuration.wallClock()
            guard
                try await api.store.confirmContactNotification(
                    alertID: notification.alertID,
                    contactIndex: notification.contactIndex,
                    nonce: notification.nonce,
                    atMilliseconds: now
                )
            else { return page(.gone, "Receipt already confirmed.", body: "<p>This link has been used.</p>") }
            // A contact's confirmation counts as an acknowledgement.
            let actor = "contact:\(contact?.name ?? "\(notification.contactIndex)")"
            if case .acknowledged = try await api.store.acknowledgeAlert(id: row.alertID, by: actor, atMilliseconds: now) {
                api.metrics.alertsAcknowledged.increment()
            }
            api.notifier.notify()
            return page(.ok, "Thank you.", body: "<p id=\"confirmed\">Your confirmation has been recorded; the dispatcher sees it.</p>")
        }
    }

    func page(_ status: HTTPResponse.Status, _ title: String, body: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers[.contentSecurityPolicy] = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        headers[.referrerPolicy] = "no-referrer"
        let html = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title))</title><style>body{font:17px system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem}
            button{font-size:1.1rem;padding:.6rem 1.2rem}</style></head><body><h1>\(escape(title))</h1>\(body)</body></html>
            """
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
    }
}

/// Text made safe to place in HTML content or a quoted attribute.
func escape(_ text: String) -> String {
    var out = ""
    out.reserveCapacity(text.count)
    for character in text {
        switch character {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&#39;"
        default: out.append(character)
        }
    }
    return out
}
