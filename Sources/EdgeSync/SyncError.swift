/// A failed exchange with the server.
public struct SyncError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        /// No answer: connection refused or reset, timeout, DNS.
        public static let transport = Code(raw: "transport")
        /// 5xx, 408 or 429: the server may succeed later.
        public static let serverUnavailable = Code(raw: "server_unavailable")
        /// Any other 4xx: sending the same thing again will not help; reported, not retried blindly.
        public static let rejected = Code(raw: "rejected")
        /// A 2xx whose body is not the acknowledgement expected.
        public static let badAcknowledgement = Code(raw: "bad_acknowledgement")
        /// The store could not prepare or record a batch (disk full, read-only, I/O error);
        /// retried with backoff, as the store recovers by itself when space returns.
        public static let storeUnavailable = Code(raw: "store_unavailable")
        /// The server refused the batch with 409 (`BatchConflict`) and the store re-based its
        /// numbering on the floors given: sent again at once under a new key.
        public static let rebased = Code(raw: "rebased")
        /// The request could not be built (encoding, compression).
        public static let encoding = Code(raw: "encoding")
        public var description: String { raw }
    }

    public var code: Code
    /// The HTTP status, if there was an answer.
    public var status: Int?
    /// The server's `Retry-After`, if any.
    public var retryAfter: Duration?
    public var message: String

    public init(code: Code, status: Int? = nil, retryAfter: Duration? = nil, message: String) {
        self.code = code
        self.status = status
        self.retryAfter = retryAfter
        self.message = message
    }

    /// Whether sending the same request again later may succeed.
    public var isRetryable: Bool {
        code == .transport || code == .serverUnavailable || code == .badAcknowledgement || code == .storeUnavailable
            || code == .rebased
    }

    public var description: String {
        "sync \(code)" + (status.map { " (HTTP \($0))" } ?? "") + ": \(message)"
    }

    /// Classifies a non-2xx answer (RFC 9110: 408 and 429 invite a retry, other 4xx do not).
    static func forStatus(_ status: Int, retryAfter: Duration?, body: [UInt8]) -> SyncError {
        let text = String(decoding: body.prefix(512), as: UTF8.self)
        if status >= 500 || status == 408 || status == 429 {
            return SyncError(code: .serverUnavailable, status: status, retryAfter: retryAfter, message: text)
        }
        return SyncError(code: .rejected, status: status, retryAfter: retryAfter, message: text)
    }
}
