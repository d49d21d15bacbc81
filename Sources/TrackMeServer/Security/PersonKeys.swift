import Crypto
import EdgeStore
import Foundation
import Logging
import Synchronization
import TrackMeCore

/// Where the master key and the sealed per-person keys come from (`--master-key-file`,
/// `--person-key-store`); hardware/PERSONAL-DATA.md, "Encryption and crypto-shredding".
public struct PersonKeyConfiguration: Sendable {
    /// The systemd credential the master key is read from (`LoadCredential=trackme-master-key:PATH`).
    public static let masterKeyCredential = "trackme-master-key"

    /// A file holding the master key: 64 hexadecimal digits or 32 raw bytes, mode 0400 or 0600.
    /// Without it (and without the credential) personal data is kept in clear, as for
    /// development, and the server says so at start.
    public var masterKeyFile: String?
    /// Where the sealed per-person keys are kept: never the data's own database, so that a
    /// backup of the data does not carry them. Default for SQLite: the database's path with
    /// `.keys` appended; PostgreSQL needs a database of its own named here.
    public var keyStore: StorageLocation?

    public init(masterKeyFile: String? = nil, keyStore: StorageLocation? = nil) {
        self.masterKeyFile = masterKeyFile
        self.keyStore = keyStore
    }
}

/// A per-person key that could not be had, or a sealed value that does not open. The row or
/// the sealed key is left as it is: nothing is replaced or deleted on this error.
struct PersonKeyError: Error, Hashable, Sendable, CustomStringConvertible {
    enum Code: String, Hashable, Sendable {
        /// No master key, or not the one the key store was sealed under.
        case masterKey = "master_key"
        /// The person's sealed key does not open under the master key (altered or damaged).
        case damagedKey = "damaged_key"
        /// The person's key is gone: erased (crypto-shredded), or the data is from a backup of
        /// a person erased since.
        case keyDestroyed = "key_destroyed"
        /// A sealed value does not open under the person's key (altered, or moved from another row).
        case damagedValue = "damaged_value"
    }

    var code: Code
    var message: String
    var description: String { "\(code.rawValue): \(message)" }
}

/// The sealed per-person keys, kept apart from the data (`SQLitePersonKeyStore`,
/// `PostgresPersonKeyStore`).
protocol PersonKeyStore: Sendable {
    /// A short name for logs.
    var displayName: String { get }
    /// The master key's fingerprint the store was first used with; records `id` when none is.
    func adoptMasterKey(id: Int64) async throws -> Int64
    func sealedKey(owner: String) async throws -> [UInt8]?
    /// Keeps `sealed` unless the owner has a key already; returns the one kept.
    func keep(owner: String, sealed: [UInt8]) async throws -> [UInt8]
    /// Deletes the owner's key for good (crypto-shredding).
    func destroy(owner: String) async throws
    func owners() async throws -> [String]
    func close() async throws
}

/// Each person's sensitive values sealed under a data key of their own (ChaCha20-Poly1305, the
/// device store's `RowCipher`), the data keys sealed under the master key and kept in the key
/// store; destroying a person's key makes every copy of their sealed values unreadable,
/// backups of the database included.
///
/// A sealed value is text: `s1.` and the base64 of `nonce | ciphertext | tag`, so that the
/// columns keep their type on both backends and a value in clear (written before the master
/// key was configured) is told apart and still read. The associated data names the value's
/// place (the person, the table, the reading's sequence number): a value copied to another
/// row or person does not open there.
///
/// What is sealed: a reading's body (heart rate, position, ...), an undispatched alert's update
/// and the profile's emergency contacts and notes. The rest stays in clear because queries
/// need it (PERSONAL-DATA.md).
final class PersonKeys: Sendable {
    static let sealedPrefix = "s1."

    private let master: RowCipher?
    private let store: (any PersonKeyStore)?
    /// Opened keys, so that a batch does not open its person's key again; a destroyed key leaves
    /// it at once.
    private let cache = Mutex<[String: RowCipher]>([:])

    /// Personal data in clear (no master key configured).
    static let off = PersonKeys(master: nil, store: nil)

    init(master: StoreKey?, store: (any PersonKeyStore)?) {
        self.master = master.map(RowCipher.init(key:))
        self.store = store
    }

    var isOn: Bool { master != nil }
    var masterKeyID: String? { master?.key.idText }
    var keyStoreName: String? { store?.displayName }

    /// Reads the master key and opens the key store as configured. A master key named but
    /// missing, unreadable, too open or of the wrong size stops the start, as does a key store
    /// sealed under another master key or, with no master key, a key store that holds keys.
    static func open(
        _ configuration: PersonKeyConfiguration,
        credentialsDirectory: String?,
        storage: StorageLocation,
        logger: Logger
    ) async throws -> PersonKeys {
        var keyFile = configuration.masterKeyFile
        var what = "--master-key-file"
        if keyFile == nil, let directory = credentialsDirectory, !directory.isEmpty {
            let path = URL(fileURLWithPath: directory).appendingPathComponent(PersonKeyConfiguration.masterKeyCredential).path
            if FileManager.default.fileExists(atPath: path) {
                keyFile = path
                what = "credential \(PersonKeyConfiguration.masterKeyCredential)"
            }
        }
        guard let keyFile else {
            // Keys left from a run with a master key would otherwise go unused, and their people
            // unreadable, without a word.
            if case .sqlite(let path) = try? keyStoreLocation(configuration, storage: storage), FileManager.default.fileExists(atPath: path) {
                let store = try SQLitePersonKeyStore(path: path)
                let owners = try await store.owners()
                try await store.close()
                if !owners.isEmpty {
                    throw ServerConfigurationError(
                        message:
                            "the key store \(path) holds \(owners.count) sealed person keys and no master key was given (--master-key-file or the credential \(PersonKeyConfiguration.masterKeyCredential))"
                    )
                }
            }
            return .off
        }
        let location = try keyStoreLocation(configuration, storage: storage)
        let master: StoreKey
        do {
            master = try StoreKey.load(path: keyFile)
        } catch {
            throw ServerConfigurationError(message: "\(what): \(error.description)")
        }
        let store: any PersonKeyStore
        switch location {
        case .sqlite(let path):
            store = try SQLitePersonKeyStore(path: path)
        case .postgres(let url):
            #if PostgreSQL
            store = try await PostgresPersonKeyStore(url: url, logger: logger)
            #else
            _ = url
            throw ServerConfigurationError(message: "this build has no PostgreSQL support for the key store; build with `--traits PostgreSQL`")
            #endif
        }
        let given = Int64(bitPattern: master.id)
        let recorded: Int64
        do {
            recorded = try await store.adoptMasterKey(id: given)
        } catch {
            try? await store.close()
            throw error
        }
        guard recorded == given else {
            try? await store.close()
            let recordedText = String(UInt64(bitPattern: recorded), radix: 16)
            throw ServerConfigurationError(
                message:
                    "\(what): the key store \(store.displayName) is sealed under master key \(recordedText), the key given is \(master.idText); nothing was changed"
            )
        }
        return PersonKeys(master: master, store: store)
    }

    /// The key store's place: the configured one, else beside the SQLite file; never the data's
    /// own database.
    static func keyStoreLocation(_ configuration: PersonKeyConfiguration, storage: StorageLocation) throws -> StorageLocation {
        if let given = configuration.keyStore {
            if given == storage {
                throw ServerConfigurationError(message: "--person-key-store must not be the data's own database: its backups would carry the keys")
            }
            return given
        }
        switch storage {
        case .sqlite(let path): return .sqlite(path: path + ".keys")
        case .postgres:
            throw ServerConfigurationError(
                message: "with PostgreSQL and a master key, give --person-key-store (a database of its own, or a file) for the sealed person keys"
            )
        }
    }

    func close() async throws {
        try await store?.close()
    }

    // MARK: - Keys

    private static func keyIdentity(_ owner: String) -> RowIdentity {
        RowIdentity(bytes: Array("trackme/person-key\0\(owner)".utf8), description: "person key of \(owner)")
    }

    /// The owner's key, made when `create` and there is none; nil when encryption is off.
    private func dataKey(_ owner: String, create: Bool) async throws -> RowCipher? {
        guard let master, let store else { return nil }
        if let cached = cache.withLock({ $0[owner] }) { return cached }
        var sealed = try await store.sealedKey(owner: owner)
        if sealed == nil, create {
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255) }
            sealed = try await store.keep(owner: owner, sealed: Array(try master.seal(bytes, Self.keyIdentity(owner))))
        }
        guard let sealed else {
            throw PersonKeyError(code: .keyDestroyed, message: "the key of \(owner) is not in the key store: the person was erased")
        }
        let cipher: RowCipher
        do {
            let bytes = try master.open(sealed, Self.keyIdentity(owner))
            cipher = RowCipher(key: try StoreKey(bytes: Array(bytes)))
        } catch {
            throw PersonKeyError(
                code: .damagedKey,
                message: "the sealed key of \(owner) in \(store.displayName) does not open under master key \(master.key.idText): \(error)"
            )
        }
        cache.withLock { $0[owner] = cipher }
        return cipher
    }

    /// Deletes the owner's key: every value sealed under it, in the database and in every copy
    /// of it, is unreadable from now on.
    func destroy(owner: String) async throws {
        cache.withLock { _ = $0.removeValue(forKey: owner) }
        try await store?.destroy(owner: owner)
        cache.withLock { _ = $0.removeValue(forKey: owner) }
    }

    /// Destroys the keys of owners no longer in `kept` (a person the retention job removed).
    func destroyKeys(except kept: Set<String>) async throws -> Int {
        guard let store else { return 0 }
        var destroyed = 0
        for owner in try await store.owners() where !kept.contains(owner) {
            try await destroy(owner: owner)
            destroyed += 1
        }
        return destroyed
    }

    // MARK: - Values

    static func isSealed(_ text: String) -> Bool { text.hasPrefix(sealedPrefix) }

    fileprivate static func readingIdentity(_ owner: String, _ sequence: Int64) -> RowIdentity {
        RowIdentity(bytes: Array("trackme/server/readings\0\(owner)\0\(sequence)".utf8), description: "reading \(sequence) of \(owner)")
    }

    private static func heartRateDayIdentity(_ owner: String, _ day: Int64) -> RowIdentity {
        RowIdentity(bytes: Array("trackme/server/heart-rate-days\0\(owner)\0\(day)".utf8), description: "heart-rate day \(day) of \(owner)")
    }

    private static func profileIdentity(_ owner: String) -> RowIdentity {
        RowIdentity(bytes: Array("trackme/server/profile\0\(owner)".utf8), description: "profile of \(owner)")
    }

    private static func undispatchedIdentity(_ owner: String, _ alertID: String) -> RowIdentity {
        RowIdentity(bytes: Array("trackme/server/undispatched-alerts\0\(owner)\0\(alertID)".utf8), description: "alert \(alertID) of \(owner)")
    }

    private static func seal(_ text: String, _ cipher: RowCipher, _ identity: RowIdentity) throws -> String {
        sealedPrefix + (try cipher.seal(Array(text.utf8), identity)).base64EncodedString()
    }

    private func open(_ text: String, _ owner: String, _ identity: RowIdentity) async throws -> String {
        guard Self.isSealed(text) else { return text }
        return try Self.open(text, try await dataKey(owner, create: false), identity)
    }

    /// `text` opened with `cipher` (nil: no master key was given), on the caller's thread.
    fileprivate static func open(_ text: String, _ cipher: RowCipher?, _ identity: RowIdentity) throws -> String {
        guard isSealed(text) else { return text }
        guard let cipher else {
            throw PersonKeyError(
                code: .masterKey,
                message:
                    "\(identity.description) is sealed and no master key was given (--master-key-file or the credential \(PersonKeyConfiguration.masterKeyCredential))"
            )
        }
        guard let data = Data(base64Encoded: String(text.dropFirst(sealedPrefix.count))) else {
            throw PersonKeyError(code: .damagedValue, message: "\(identity.description) is not sealed text (base64)")
        }
        do {
            return String(decoding: try cipher.open(data, identity), as: UTF8.self)
        } catch {
            throw PersonKeyError(code: .damagedValue, message: "\(error)")
        }
    }

    /// The bodies sealed, as the store writes them; unchanged when encryption is off.
    func seal(_ rows: [ReadingRow], owner: String) async throws -> [ReadingRow] {
        guard let cipher = try await dataKey(owner, create: true) else { return rows }
        return try rows.map { row in
            var sealed = row
            sealed.body = try Self.seal(row.body, cipher, Self.readingIdentity(owner, row.sequence))
            return sealed
        }
    }

    /// One body as stored, sealed under the owner's key.
    func sealBody(_ body: String, owner: String, sequence: Int64) async throws -> String {
        guard let cipher = try await dataKey(owner, create: true) else { return body }
        return try Self.seal(body, cipher, Self.readingIdentity(owner, sequence))
    }

    /// The bodies opened; a body in clear is taken as it is.
    func open(_ rows: [StoredReadingRow], owner: String) async throws -> [StoredReadingRow] {
        guard rows.contains(where: { Self.isSealed($0.body) }) else { return rows }
        return try await readingOpener(owner: owner).open(rows)
    }

    /// What opens the owner's sealed readings on a thread of the caller's choosing: the key is
    /// looked up here (it may take the key store), the work of opening each row is then the
    /// caller's (a download opens millions, on the heavy requests' threads, not the pool that
    /// takes alerts in).
    func readingOpener(owner: String) async throws -> ReadingOpener {
        ReadingOpener(owner: owner, cipher: try await dataKey(owner, create: false))
    }

    struct ReadingOpener: Sendable {
        let owner: String
        let cipher: RowCipher?

        func open(_ rows: [StoredReadingRow]) throws -> [StoredReadingRow] {
            var opened = rows
            for index in opened.indices where PersonKeys.isSealed(opened[index].body) {
                opened[index].body = try PersonKeys.open(opened[index].body, cipher, PersonKeys.readingIdentity(owner, opened[index].sequence))
            }
            return opened
        }
    }

    func openBody(_ body: String, owner: String, sequence: Int64) async throws -> String {
        try await open(body, owner, Self.readingIdentity(owner, sequence))
    }

    /// A day's heart-rate counters as stored (`HeartRateDays`), sealed like the readings they
    /// come from: they are the person's health data too.
    func sealHeartRateDay(_ summary: String, owner: String, day: Int64) async throws -> String {
        guard let cipher = try await dataKey(owner, create: true) else { return summary }
        return try Self.seal(summary, cipher, Self.heartRateDayIdentity(owner, day))
    }

    func openHeartRateDay(_ summary: String, owner: String, day: Int64) async throws -> String {
        try await open(summary, owner, Self.heartRateDayIdentity(owner, day))
    }

    /// An undispatched alert's latest update as stored, sealed under the owner's key.
    func sealAlertBody(_ body: String, owner: String, alertID: String) async throws -> String {
        guard let cipher = try await dataKey(owner, create: true) else { return body }
        return try Self.seal(body, cipher, Self.undispatchedIdentity(owner, alertID))
    }

    /// An undispatched alert's update opened; one in clear is taken as it is.
    func openAlertBody(_ body: String, owner: String, alertID: String) async throws -> String {
        try await open(body, owner, Self.undispatchedIdentity(owner, alertID))
    }

    /// The profile's JSON as stored: contacts and notes in `sealed`, the rest in clear.
    func sealProfile(_ json: String, owner: String) async throws -> String {
        guard let cipher = try await dataKey(owner, create: true) else { return json }
        let profile: PersonProfile = try StoreJSON.decode(json)
        var shell = profile
        shell.contacts = nil
        shell.notes = nil
        let secrets = try StoreJSON.encode(ProfileSecrets(contacts: profile.contacts, notes: profile.notes))
        let sealed = try Self.seal(secrets, cipher, Self.profileIdentity(owner))
        let shellJSON = try StoreJSON.encode(shell)
        guard shellJSON.hasPrefix("{"), shellJSON.count > 2 else { throw StoreError(code: .inconsistent, message: "profile is not a JSON object") }
        return "{\"sealed\":\"\(sealed)\"," + shellJSON.dropFirst()
    }

    /// The profile's JSON with its contacts and notes opened; a profile in clear is taken as it is.
    func openProfile(_ json: String, owner: String) async throws -> String {
        guard json.hasPrefix("{\"sealed\":") else { return json }
        let stored: SealedField = try StoreJSON.decode(json)
        guard let sealed = stored.sealed else { return json }
        var profile: PersonProfile = try StoreJSON.decode(json)
        let secrets: ProfileSecrets = try StoreJSON.decode(try await open(sealed, owner, Self.profileIdentity(owner)))
        profile.contacts = secrets.contacts
        profile.notes = secrets.notes
        return try StoreJSON.encode(profile)
    }

    /// As `openProfile`, but a profile whose contacts and notes do not open is still given, with
    /// no contacts and a note saying why: the board, an alert's intake and the person's page keep
    /// working for everything else, and the sealed value is left as it is.
    func readableProfile(_ json: String, owner: String) async throws -> String {
        do {
            return try await openProfile(json, owner: owner)
        } catch let error as PersonKeyError {
            var profile: PersonProfile = try StoreJSON.decode(json)
            profile.contacts = nil
            profile.notes =
                "[contacts and notes cannot be opened: \(error.code.rawValue); the server's operator must restore the person key or the master key]"
            return try StoreJSON.encode(profile)
        }
    }

    func readable(_ rows: [AlertDeskRow]) async throws -> [AlertDeskRow] {
        var opened = rows
        for index in opened.indices { opened[index].person = try await readableProfile(opened[index].person, owner: opened[index].deviceID) }
        return opened
    }

    func readable(_ rows: [DeviceStatusRow]) async throws -> [DeviceStatusRow] {
        var opened = rows
        for index in opened.indices { opened[index].person = try await readableProfile(opened[index].person, owner: opened[index].deviceID) }
        return opened
    }

    private struct SealedField: Decodable {
        var sealed: String?
    }

    private struct ProfileSecrets: Codable {
        var contacts: [EmergencyContact]?
        var notes: String?
    }
}
