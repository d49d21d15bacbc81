import Crypto
package import Foundation
import TrackMeCore

/// The key that encrypts a store's row bodies at rest: 32 bytes for ChaCha20-Poly1305.
///
/// The key is never written into the store. The store records only `id`, a fingerprint
/// (HMAC-SHA-256 of a fixed label under the key, first 8 bytes), so that a store opened with
/// another key is refused with `StoreError.Code.wrongKey` before any row is read, and an
/// operator can tell which key a store needs without the key itself.
///
/// Two keys are equal when their fingerprints are (64 bits: a collision between two random
/// keys is out of reach, and equality is only used to compare configurations).
public struct StoreKey: Hashable, Sendable, CustomStringConvertible {
    let key: SymmetricKey
    /// The fingerprint recorded in the store's meta table.
    public let id: UInt64

    /// A key from its 32 bytes.
    public init(bytes: [UInt8]) throws(StoreKeyError) {
        let key = SymmetricKey(data: bytes)
        guard key.bitCount == 256 else {
            throw StoreKeyError(code: .malformed, source: "bytes", message: "expected 32 bytes, got \(key.bitCount / 8)")
        }
        self.key = key
        let mac = HMAC<SHA256>.authenticationCode(for: Array("trackme store key id v1".utf8), using: key)
        self.id = mac.withUnsafeBytes { raw in raw.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
    }

    /// A key from a file's contents: 64 hexadecimal digits (what `openssl rand -hex 32` prints,
    /// surrounding white space ignored) or exactly 32 raw bytes.
    public init(material: [UInt8], source: String) throws(StoreKeyError) {
        let text = String(decoding: material, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.utf8.count == 64, let bytes = Hex.decode(text) {
            self = try Self.make(bytes, source: source)
        } else if material.count == 32 {
            self = try Self.make(material, source: source)
        } else {
            throw StoreKeyError(
                code: .malformed,
                source: source,
                message: "expected 64 hexadecimal digits or 32 raw bytes, got \(material.count) bytes"
            )
        }
    }

    private static func make(_ bytes: [UInt8], source: String) throws(StoreKeyError) -> StoreKey {
        do {
            return try StoreKey(bytes: bytes)
        } catch {
            throw StoreKeyError(code: error.code, source: source, message: error.message)
        }
    }

    /// Reads a key file (a systemd credential, or the configured fallback file). The file must be
    /// readable by its owner only: a key readable by others protects nothing.
    public static func load(path: String) throws(StoreKeyError) -> StoreKey {
        let mode: Int
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0
        } catch {
            throw StoreKeyError(code: .unreadable, source: path, message: "\(error.localizedDescription)")
        }
        guard mode & 0o077 == 0 else {
            throw StoreKeyError(
                code: .tooOpen,
                source: path,
                message: "mode \(String(mode & 0o777, radix: 8)) lets others read it; chmod 0400 (owner only)"
            )
        }
        let material: [UInt8]
        do {
            material = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw StoreKeyError(code: .unreadable, source: path, message: "\(error.localizedDescription)")
        }
        return try StoreKey(material: material, source: path)
    }

    /// `id` as 16 hexadecimal digits, as logs, `status` and STORE-KEY.md show it.
    public var idText: String { Self.idText(id) }

    /// 16 hex digits, as the store epoch is written.
    static func idText(_ id: UInt64) -> String { ReadingStore.epochText(Int64(bitPattern: id)) }

    public var description: String { "store key \(idText)" }

    public static func == (lhs: StoreKey, rhs: StoreKey) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// A store key that could not be had: which file, and why.
public struct StoreKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        /// The file does not exist or cannot be read.
        public static let unreadable = Code(raw: "unreadable")
        /// The file is readable by group or others.
        public static let tooOpen = Code(raw: "too_open")
        /// Not 32 bytes nor 64 hexadecimal digits.
        public static let malformed = Code(raw: "malformed")
        public var description: String { raw }
    }

    public var code: Code
    /// The key file, or `bytes` for a key handed over directly.
    public var source: String
    public var message: String

    public var description: String { "store key \(code) at \(source): \(message)" }
}

/// Seals and opens row bodies with ChaCha20-Poly1305 (RFC 8439) under the store key.
///
/// Why ChaCha20-Poly1305 and not AES-GCM: the Raspberry Pi's Cortex-A53/A72 (Pi 3, Pi 4) have no
/// ARMv8 Crypto Extensions, so AES runs in constant-time software there at a fraction of
/// ChaCha20's speed, and a table-based AES would leak timing; ChaCha20 is add-rotate-xor only,
/// fast and constant-time on any core. Both are AEADs from swift-crypto (BoringSSL on Linux).
///
/// Every sealed value is `nonce (12) | ciphertext | tag (16)`: 28 bytes more than the plaintext.
/// The nonce is random (96 bits; a store seals far fewer than 2^32 values under one key, where
/// random nonces start to risk a repeat). The associated data is the row's identity (`RowIdentity`),
/// so a sealed body copied into another row, another table or another key of `device_state`
/// fails authentication there.
package struct RowCipher: Sendable {
    package let key: StoreKey

    package init(key: StoreKey) { self.key = key }

    package func seal(_ plaintext: some DataProtocol, _ identity: RowIdentity) throws -> Data {
        try ChaChaPoly.seal(plaintext, using: key.key, authenticating: identity.bytes).combined
    }

    /// The plaintext, or a `RowAuthenticationFailure` when the value was altered, moved from
    /// another row, or sealed under another key.
    package func open(_ sealed: some DataProtocol, _ identity: RowIdentity) throws(RowAuthenticationFailure) -> Data {
        do {
            let box = try ChaChaPoly.SealedBox(combined: sealed)
            return try ChaChaPoly.open(box, using: key.key, authenticating: identity.bytes)
        } catch {
            throw RowAuthenticationFailure(identity: identity.description)
        }
    }
}

/// A sealed row body that did not authenticate under the store key at its place.
package struct RowAuthenticationFailure: Error, CustomStringConvertible {
    package var identity: String
    package var description: String { "authentication failed (\(identity)): altered, moved from another row, or sealed under another key" }
}

/// Where a sealed value lives: the associated data of its AEAD.
package struct RowIdentity: CustomStringConvertible {
    let bytes: [UInt8]
    package let description: String

    /// Any other place: the server's per-person values name theirs (`PersonKeys`).
    package init(bytes: [UInt8], description: String) {
        self.bytes = bytes
        self.description = description
    }

    /// A reading, by sequence number.
    static func reading(_ seq: Int64) -> RowIdentity {
        var bytes = Array("trackme/readings\0".utf8)
        var v = UInt64(bitPattern: seq)
        for _ in 0..<8 {
            bytes.append(UInt8(truncatingIfNeeded: v >> 56))
            v <<= 8
        }
        return RowIdentity(bytes: bytes, description: "readings seq \(seq)")
    }

    /// One update of one alert in the journal.
    static func alertUpdate(alertID: String, updateSequence: Int) -> RowIdentity {
        let bytes = Array("trackme/alert_updates\0\(alertID)\0\(updateSequence)".utf8)
        return RowIdentity(bytes: bytes, description: "alert_updates \(alertID) #\(updateSequence)")
    }

    /// A value of `device_state`, by key.
    static func deviceState(_ key: String) -> RowIdentity {
        RowIdentity(bytes: Array("trackme/device_state\0\(key)".utf8), description: "device_state \(key)")
    }
}
