import Crypto
import Foundation

/// The rules a password a person chooses must meet, after NIST SP 800-63B: long enough, not too
/// long for bcrypt, not the account's own name, and not on the operator's list of breached
/// passwords. No rules about upper case, lower case, digits or symbols, and no expiry: those
/// make passwords worse, not better. Pure once the list is loaded.
struct PasswordRules: Sendable {
    var minimumCharacters: Int
    /// The first 8 bytes of SHA-256 of each listed password, lower-cased, sorted: 8 bytes a
    /// password whatever the list holds (a false match is one in 2^64). nil: no list.
    private var breached: [UInt64]?

    /// bcrypt reads at most 72 bytes; a longer password is refused rather than cut silently.
    static let maximumBytes = PasswordHasher.passwordBytes.upperBound

    init(minimumCharacters: Int, breachedPasswords: [String]? = nil) {
        self.minimumCharacters = max(1, minimumCharacters)
        breached = breachedPasswords.map { $0.map(Self.fingerprint).sorted() }
    }

    /// Whether a breached-password list is checked.
    var checksBreaches: Bool { breached != nil }
    var breachedCount: Int { breached?.count ?? 0 }

    /// Why `password` is refused for this account, or nil if it is fine.
    func problem(_ password: String, username: String, displayName: String) -> String? {
        let characters = password.unicodeScalars.count
        if characters < minimumCharacters { return "must be at least \(minimumCharacters) characters (a few words make a good one)" }
        if password.utf8.count > Self.maximumBytes { return "must be at most \(Self.maximumBytes) bytes" }
        let folded = password.lowercased()
        if folded == username.lowercased() || folded == displayName.lowercased() { return "must not be the account's username or name" }
        if let breached, Self.contains(breached, Self.fingerprint(password)) {
            return "is on a list of passwords known from data breaches: choose another"
        }
        return nil
    }

    static func fingerprint(_ password: String) -> UInt64 {
        SHA256.hash(data: Array(password.lowercased().utf8)).prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    static func contains(_ sorted: [UInt64], _ value: UInt64) -> Bool {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low < sorted.count && sorted[low] == value
    }

    /// The rules with the operator's list: nil path or no file there means no list (the caller
    /// logs it); a file that is there but cannot be read stops the start, so that a check the
    /// operator asked for is never silently off.
    static func load(_ configuration: AccountsConfiguration) throws -> PasswordRules {
        guard let path = configuration.breachedPasswordsFile, FileManager.default.fileExists(atPath: path) else {
            return PasswordRules(minimumCharacters: configuration.minimumPasswordLength)
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ServerConfigurationError(message: "--breached-passwords-file: cannot read \(path): \(error.localizedDescription)")
        }
        let lines = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).map(String.init).filter { !$0.isEmpty }
        return PasswordRules(minimumCharacters: configuration.minimumPasswordLength, breachedPasswords: lines)
    }
}
