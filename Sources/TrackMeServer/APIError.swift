// Data path: the server, the far end of step 5 (batches, alerts, the feed) and what people use (console, people, runs, fleet).

import Foundation
public import HTTPTypes
public import Hummingbird
import TrackMeCore

/// An error answered to the client as `{"error": {"code", "field", "message"}}` (WIRE.md).
public struct APIError: HTTPResponseError, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let missingField = Code(rawValue: "missing_field")
        public static let wrongType = Code(rawValue: "wrong_type")
        public static let invalidValue = Code(rawValue: "invalid_value")
        public static let malformedJSON = Code(rawValue: "malformed_json")
        public static let unauthorized = Code(rawValue: "unauthorized")
        public static let forbidden = Code(rawValue: "forbidden")
        public static let tooLarge = Code(rawValue: "too_large")
        public static let notFound = Code(rawValue: "not_found")
        public static let conflict = Code(rawValue: "conflict")
        public static let unsupportedMediaType = Code(rawValue: "unsupported_media_type")
        public static let internalError = Code(rawValue: "internal")
        public static let unavailable = Code(rawValue: "unavailable")
        public static let tooManyRequests = Code(rawValue: "too_many_requests")
        /// The database failed its integrity check at start; ingest is refused until repaired.
        public static let databaseDamaged = Code(rawValue: "database_damaged")
    }

    public var status: HTTPResponse.Status
    public var code: Code
    /// The field at fault, as a path (`readings[3].hr.bpm`), or nil.
    public var field: String?
    public var message: String
    /// Sent as `Retry-After` (seconds) with a 429 or 503.
    public var retryAfterSeconds: Int?

    public init(status: HTTPResponse.Status, code: Code, field: String? = nil, message: String) {
        self.status = status
        self.code = code
        self.field = field
        self.message = message
    }

    public var description: String { "\(status.code) \(code.rawValue) \(field ?? "-"): \(message)" }

    init(_ wire: WireFormatError) {
        self.init(status: .badRequest, code: Code(rawValue: wire.code.rawValue), field: wire.field.isEmpty ? nil : wire.field, message: wire.message)
    }

    static func unauthorized() -> APIError {
        APIError(status: .unauthorized, code: .unauthorized, message: "missing or wrong bearer token")
    }

    /// A right token past its expiry (dispatcher tokens): 401, saying what to do.
    static func expiredToken() -> APIError {
        APIError(status: .unauthorized, code: .unauthorized, message: "this token has expired; an admin rotates it for a new one")
    }

    static func forbidden(_ message: String) -> APIError {
        APIError(status: .forbidden, code: .forbidden, message: message)
    }

    static func tooLarge(limit: Int) -> APIError {
        APIError(status: .contentTooLarge, code: .tooLarge, message: "body exceeds \(limit) bytes")
    }

    static func notFound(_ message: String) -> APIError {
        APIError(status: .notFound, code: .notFound, message: message)
    }

    static func tooManyRequests(_ message: String, retryAfterSeconds: Int) -> APIError {
        var error = APIError(status: .tooManyRequests, code: .tooManyRequests, message: message)
        error.retryAfterSeconds = retryAfterSeconds
        return error
    }

    static func invalid(_ field: String, _ message: String) -> APIError {
        APIError(status: .badRequest, code: .invalidValue, field: field, message: message)
    }

    /// A number the device counts that lies outside what the server can store and hand back
    /// one above (`SyncBatch.largestNumber`): 422, and nothing of the request is stored.
    static func numberOutOfRange(_ field: String, _ value: Int64, lowest: Int64) -> APIError {
        APIError(
            status: .unprocessableContent,
            code: .invalidValue,
            field: field,
            message: "\(value) is outside \(lowest)-\(SyncBatch.largestNumber), the numbers a device counts in"
        )
    }

    struct Body: Codable, Equatable {
        struct Detail: Codable, Equatable {
            var code: String
            var field: String?
            var message: String
            func encode(to encoder: any Encoder) throws {
                var c = encoder.container(keyedBy: CodingKeys.self)
                try c.encode(code, forKey: .code)
                try c.encode(field, forKey: .field)
                try c.encode(message, forKey: .message)
            }
        }
        var error: Detail
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = Body(error: .init(code: code.rawValue, field: field, message: message))
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        if status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        if let retryAfterSeconds { headers[.retryAfter] = "\(retryAfterSeconds)" }
        let data = (try? WireCodec.encode(body)) ?? Data()
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
