import TrackMeCore

/// Why an ATT transaction or the link failed.
public struct ATTClientError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// No response within the ATT transaction timeout (30 s); the bearer is then unusable.
        public static let transactionTimeout = Code(name: "transaction_timeout")
        /// The server answered with an Error Response.
        public static let errorResponse = Code(name: "error_response")
        /// The link closed (hang-up, reset, or closed by us).
        public static let linkClosed = Code(name: "link_closed")
        /// The response did not parse or did not fit the request.
        public static let malformedResponse = Code(name: "malformed_response")
        /// The server lacks a service, characteristic or descriptor we need.
        public static let missingAttribute = Code(name: "missing_attribute")
        public var description: String { name }
    }

    public var code: Code
    /// The request opcode of the failed transaction, if there was one.
    public var requestOpcode: UInt8?
    public var handle: UInt16?
    /// The server's error code, for `.errorResponse`.
    public var attError: ATTErrorCode?
    public var detail: String

    public init(code: Code, requestOpcode: UInt8? = nil, handle: UInt16? = nil, attError: ATTErrorCode? = nil, detail: String) {
        self.code = code
        self.requestOpcode = requestOpcode
        self.handle = handle
        self.attError = attError
        self.detail = detail
    }

    public var description: String {
        var text = "\(code): \(detail)"
        if let requestOpcode { text += " (request 0x\(Hex.byte(requestOpcode))" + (handle.map { ", handle \($0)" } ?? "") + ")" }
        if let attError { text += " ATT error \(attError)" }
        return text
    }
}
