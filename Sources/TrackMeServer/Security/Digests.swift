import Crypto

/// The server's hashes, from swift-crypto (BoringSSL's SHA-256), as hex text: bearer tokens and
/// session secrets are stored as their SHA-256 (256-bit random secrets: nothing to brute-force,
/// no salt needed), batches are compared by digest on replay, contact links carry an HMAC.
enum ServerDigest {
    static func sha256Hex(_ text: String) -> String {
        hex(SHA256.hash(data: Array(text.utf8)))
    }

    /// HMAC-SHA-256 (RFC 2104) of `message` under `key`.
    static func hmacSHA256Hex(key: [UInt8], message: [UInt8]) -> String {
        hex(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
