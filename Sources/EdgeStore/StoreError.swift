/// A store failure, with a code a caller can act on and the context needed to understand it.
public struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        /// The file system is full (`ENOSPC`, SQLite's `SQLITE_FULL`).
        public static let diskFull = Code(raw: "disk_full")
        /// The file system or the file is read-only (`EROFS`, `SQLITE_READONLY`).
        public static let readOnly = Code(raw: "read_only")
        /// An I/O error other than the two above (`SQLITE_IOERR`, a dying SD card).
        public static let ioError = Code(raw: "io_error")
        /// The file is not a healthy SQLite database.
        public static let corrupt = Code(raw: "corrupt")
        /// A stored value could not be decoded.
        public static let badRecord = Code(raw: "bad_record")
        /// The store is encrypted (its meta names the key id) and no key was given.
        /// The file is left exactly as it is.
        public static let keyMissing = Code(raw: "key_missing")
        /// The store was encrypted under another key than the one given. The file is left
        /// exactly as it is.
        public static let wrongKey = Code(raw: "wrong_key")
        /// Any other SQLite failure.
        public static let database = Code(raw: "database")
        public var description: String { raw }
    }

    public var code: Code
    public var message: String
    /// The store's file.
    public var path: String

    public init(code: Code, message: String, path: String) {
        self.code = code
        self.message = message
        self.path = path
    }

    public var description: String { "store \(code) at \(path): \(message)" }
}

/// Whether the store can currently write. Readings and alerts are kept in memory while it
/// cannot, and written as soon as it can again.
public enum StoreHealth: String, Hashable, Sendable {
    case healthy
    case diskFull = "disk_full"
    case readOnly = "read_only"
    case ioError = "io_error"
    /// The store is encrypted and its key is missing or another one: the file is kept
    /// untouched and the store runs from memory.
    case keyUnavailable = "key_unavailable"
}
