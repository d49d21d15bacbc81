import Crypto
import TrackMeCore

/// The server's hashes, from swift-crypto (BoringSSL's SHA-256), as hex text: bearer tokens and
/// session secrets are stored as their SHA-256 (256-bit random secrets: nothing to brute-force,
/// no salt needed), batches are compared by digest on replay, contact links carry an HMAC.
enum ServerDigest {
    static func sha256Hex(_ text: String) -> String {
        Hex.encode(SHA256.hash(data: Array(text.utf8)))
    }

    /// HMAC-SHA-256 (RFC 2104) of `message` under `key`.
    static func hmacSHA256Hex(key: [UInt8], message: [UInt8]) -> String {
        Hex.encode(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }
}
