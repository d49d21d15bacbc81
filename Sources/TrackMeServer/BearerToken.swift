/// A bearer token as handed out once: `ID.SECRET`, where `ID` finds the stored row and only the
/// SHA-256 of `SECRET` is stored. Comparing the hashes in constant time keeps the check from
/// leaking how much of a guessed secret was right.
struct BearerToken: Hashable, Sendable {
    var id: String
    var secret: String

    var text: String { "\(id).\(secret)" }
    var secretHash: String { ServerDigest.sha256Hex(secret) }

    /// A new token: 64 random bits of id, 256 random bits of secret, both URL-safe text.
    static func generate() -> BearerToken {
        var rng = SystemRandomNumberGenerator()
        return BearerToken(id: randomText(bytes: 8, using: &rng), secret: randomText(bytes: 32, using: &rng))
    }

    init(id: String, secret: String) {
        self.id = id
        self.secret = secret
    }

    /// Parses `Authorization: Bearer ID.SECRET`; nil for anything else.
    init?(authorization: String?) {
        guard let authorization else { return nil }
        let prefix = "Bearer "
        guard authorization.count > prefix.count, authorization.lowercased().hasPrefix("bearer ") else { return nil }
        let value = authorization.dropFirst(prefix.count).trimmingSpaces()
        let parts = value.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, parts[0].utf8.count <= 64, parts[1].utf8.count <= 256 else {
            return nil
        }
        self.init(id: String(parts[0]), secret: String(parts[1]))
    }

    /// Constant-time equality of two hex digests (length is public: both are 64 characters).
    static func digestsEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<x.count { difference |= x[i] ^ y[i] }
        return difference == 0
    }

    private static func randomText(bytes: Int, using rng: inout SystemRandomNumberGenerator) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        // The first character is a letter or digit: an id that began with "-" would read as an
        // option to `trackme-server token revoke ID` (a usage error, once in 64 tokens). One more
        // character than 6 bits each needs keeps at least `bytes` of entropy with that one at 5.95.
        var text = String(alphabet[Int(rng.next() % 62)])
        for _ in 0..<((bytes * 8 + 5) / 6) {
            text.append(alphabet[Int(rng.next() % 64)])
        }
        return text
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}
