import Foundation
import TrackMeCore

/// When an unacknowledged alert reaches its emergency contacts: the first at the time of the
/// `notifyNextContact` step of `DispatchSettings`, each next one `escalationRepeat` later, in the
/// person's order. Pure.
enum ContactSchedule {
    /// How many contacts should have been told by `now` for an alert opened at `opened`.
    static func due(settings: DispatchSettings, openedMilliseconds opened: Int64, nowMilliseconds now: Int64, contacts: Int) -> Int {
        guard contacts > 0, let first = settings.escalation.first(where: { $0.action == .notifyNextContact })?.after.milliseconds else { return 0 }
        let elapsed = now - opened
        guard elapsed >= first else { return 0 }
        let repeatEvery = settings.escalationRepeat.milliseconds
        guard repeatEvery > 0 else { return 1 }
        return min(contacts, Int((elapsed - first) / repeatEvery) + 1)
    }
}

/// A link a contact opens to confirm they received an alert: `PAYLOAD.MAC`, where PAYLOAD is
/// base64url of `alert_id \n contact_index \n expires_ms \n nonce` and MAC the hex HMAC-SHA256
/// of PAYLOAD under the server's link key. Signed (a changed alert, index or expiry is refused),
/// expiring, and single-use: the nonce is stored with the notification and cleared by the first
/// confirmation.
struct ContactLink: Hashable, Sendable {
    var alertID: String
    var contactIndex: Int
    var expiresMilliseconds: Int64
    var nonce: String

    func token(key: [UInt8]) -> String {
        Self.sign(["\(alertID)", "\(contactIndex)", "\(expiresMilliseconds)", nonce], key: key)
    }

    /// The link a token names, if its MAC is right; nil for anything forged or malformed.
    init?(token: String, key: [UInt8]) {
        guard let fields = Self.verified(token, key: key), fields.count == 4, let index = Int(fields[1]), let expires = Int64(fields[2])
        else { return nil }
        self.init(alertID: String(fields[0]), contactIndex: index, expiresMilliseconds: expires, nonce: String(fields[3]))
    }

    init(alertID: String, contactIndex: Int, expiresMilliseconds: Int64, nonce: String) {
        self.alertID = alertID
        self.contactIndex = contactIndex
        self.expiresMilliseconds = expiresMilliseconds
        self.nonce = nonce
    }

    /// `PAYLOAD.MAC` over newline-separated fields: the one signer of the server's links (an
    /// account's links sign theirs under a key derived from the same one).
    static func sign(_ fields: [String], key: [UInt8]) -> String {
        let payload = base64url(Array(fields.joined(separator: "\n").utf8))
        return payload + "." + ServerDigest.hmacSHA256Hex(key: key, message: Array(payload.utf8))
    }

    /// The fields of a token whose MAC is right; nil for anything forged or malformed.
    static func verified(_ token: String, key: [UInt8]) -> [String]? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].utf8.count <= 1024 else { return nil }
        let expected = ServerDigest.hmacSHA256Hex(key: key, message: Array(parts[0].utf8))
        guard BearerToken.digestsEqual(expected, String(parts[1])), let bytes = unbase64url(String(parts[0])) else { return nil }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func unbase64url(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}

/// When the notifier runs again for one contact and purpose: at once the first time; after a
/// failed run, `backoff` later, doubling each time (30, 60, 120, 240 s by default), until
/// `attempts` runs failed; never after one exited 0. A run that never finished (the server
/// stopped or crashed during it) counts as failed once its time limit and a minute more have
/// passed. Wall-clock milliseconds in, a decision out. Pure.
struct ContactRetry: Hashable, Sendable {
    var attempts: Int
    var backoff: Duration
    var timeLimit: Duration

    enum Next: Hashable, Sendable {
        /// Run attempt number N now.
        case due(Int)
        case wait(untilMilliseconds: Int64)
        /// An instance runs it now.
        case running
        case told
        case gaveUp
    }

    func next(after earlier: [ContactAttempt], nowMilliseconds now: Int64) -> Next {
        guard let last = earlier.max(by: { $0.attempt < $1.attempt }) else { return .due(1) }
        if earlier.contains(where: { $0.result == .told }) { return .told }
        if last.result == nil, now < last.startedMilliseconds + timeLimit.milliseconds + 60_000 { return .running }
        if last.attempt >= attempts { return .gaveUp }
        let at = (last.finishedMilliseconds ?? last.startedMilliseconds) + wait(after: last.attempt)
        return now >= at ? .due(last.attempt + 1) : .wait(untilMilliseconds: at)
    }

    /// The wait after failed attempt `attempt` (1-based), in ms.
    func wait(after attempt: Int) -> Int64 {
        backoff.milliseconds << Int64(min(max(attempt - 1, 0), 20))
    }
}

extension ConsoleConfiguration {
    var contactRetry: ContactRetry {
        ContactRetry(attempts: max(1, contactNotifierAttempts), backoff: contactNotifierBackoff, timeLimit: contactNotifierTimeLimit)
    }
}
