import TrackMeCore

/// Why a link was sent to an account's owner.
enum AccountLinkPurpose: String, Hashable, Sendable, CaseIterable {
    /// Proves the address given at sign-up; the account may sign in once it is used.
    case verifyAccount = "verify_account"
    /// Sets a new password without the old one.
    case passwordReset = "password_reset"
}

/// A link sent to an account's owner: signed by the contacts' link signer (`ContactLink.sign`)
/// under a key derived from the server's link key, so a contact's link is never an account's
/// and the other way round; expiring (the expiry is signed); single-use (the link's row records
/// its first use, and holds only the SHA-256 of the nonce).
struct AccountLink: Hashable, Sendable {
    var id: String
    var accountID: String
    var purpose: AccountLinkPurpose
    var expiresMilliseconds: Int64
    var nonce: String

    /// The account links' own key: HMAC of a fixed label under the server's link key.
    static func key(from linkKey: [UInt8]) -> [UInt8] {
        Array(ServerDigest.hmacSHA256Hex(key: linkKey, message: Array("trackme account links".utf8)).utf8)
    }

    func token(linkKey: [UInt8]) -> String {
        ContactLink.sign(["account", purpose.rawValue, id, accountID, "\(expiresMilliseconds)", nonce], key: Self.key(from: linkKey))
    }

    /// The link a token names, if its MAC is right; nil for anything forged or malformed.
    init?(token: String, linkKey: [UInt8]) {
        guard let fields = ContactLink.verified(token, key: Self.key(from: linkKey)), fields.count == 6, fields[0] == "account",
            let purpose = AccountLinkPurpose(rawValue: fields[1]), let expires = Int64(fields[4])
        else { return nil }
        self.init(id: fields[2], accountID: fields[3], purpose: purpose, expiresMilliseconds: expires, nonce: fields[5])
    }

    init(id: String, accountID: String, purpose: AccountLinkPurpose, expiresMilliseconds: Int64, nonce: String) {
        self.id = id
        self.accountID = accountID
        self.purpose = purpose
        self.expiresMilliseconds = expiresMilliseconds
        self.nonce = nonce
    }

    /// A new link for the account, good until `now + lifetime`.
    static func make(accountID: String, purpose: AccountLinkPurpose, now: Int64, lifetime: Duration) -> AccountLink {
        AccountLink(
            id: BearerToken.generate().id,
            accountID: accountID,
            purpose: purpose,
            expiresMilliseconds: now + lifetime.milliseconds,
            nonce: BearerToken.generate().secret
        )
    }

    var nonceHash: String { ServerDigest.sha256Hex(nonce) }
}

/// A link's row.
struct StoredAccountLink: Hashable, Sendable {
    var id: String
    var accountID: String
    var purpose: AccountLinkPurpose
    var nonceHash: String
    var createdMilliseconds: Int64
    var expiresMilliseconds: Int64
    var usedMilliseconds: Int64?
}

/// What using a link did.
enum AccountLinkUse: Hashable, Sendable {
    /// Used now: the account is verified, or has its new password and no sessions left.
    case done
    /// Used before: nothing changed.
    case used
    case expired
    /// No such link (or not this account's, or another purpose's): nothing changed.
    case unknown
}
