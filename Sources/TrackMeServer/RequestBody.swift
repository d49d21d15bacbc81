import Foundation
import GzipCodec
import HTTPTypes
import Hummingbird
import TrackMeCore

/// Request bodies as every room reads them: bounded, gzip inflated, JSON decoded with the
/// wire's error answers.
enum RequestBody {
    /// The request body, inflated if gzip, refused with 413 past the limit in either form.
    static func read(_ request: Request, limit: Int) async throws -> [UInt8] {
        try inflated(try await collect(request, limit: limit), contentEncoding: request.headers[.contentEncoding], limit: limit)
    }

    /// The request body as sent (not inflated), refused with 413 past the limit.
    static func collect(_ request: Request, limit: Int) async throws -> [UInt8] {
        // A declared length far over the limit is refused unread; a little over is drained below
        // so that the client reads the 413 instead of a reset connection.
        if let length = request.headers[.contentLength].flatMap(Int.init), length > 16 * limit {
            throw APIError.tooLarge(limit: limit)
        }
        var bytes: [UInt8] = []
        var overLimit = false
        var drained = 0
        for try await buffer in request.body {
            if overLimit {
                // Read on (up to a bound) so the client sees the 413 instead of a reset connection.
                drained += buffer.readableBytes
                if drained > 16 * limit { break }
                continue
            }
            if bytes.count + buffer.readableBytes > limit {
                overLimit = true
                bytes = []
                continue
            }
            bytes.append(contentsOf: buffer.readableBytesView)
        }
        if overLimit { throw APIError.tooLarge(limit: limit) }
        return bytes
    }

    /// A body `collect` read, inflated as its `Content-Encoding` says, refused with 413 past the
    /// limit once inflated. CPU work with no I/O: intake runs it on its own threads.
    static func inflated(_ bytes: [UInt8], contentEncoding: String?, limit: Int) throws -> [UInt8] {
        switch contentEncoding?.lowercased() {
        case nil, "identity":
            return bytes
        case "gzip", "x-gzip":
            do {
                return try Gzip.decompress(bytes, limit: limit)
            } catch  where error.tooLarge {
                throw APIError.tooLarge(limit: limit)
            } catch {
                throw APIError(status: .badRequest, code: .malformedJSON, field: nil, message: "gzip: \(error.message)")
            }
        case .some(let other):
            throw APIError(
                status: .unsupportedMediaType,
                code: .unsupportedMediaType,
                field: "Content-Encoding",
                message: "\(other) is not supported; use gzip"
            )
        }
    }

    /// A JSON body as `T`; a key given twice in one object is refused, not silently overridden.
    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws -> T {
        if let repeated = DuplicateKeys.first(in: bytes) {
            throw APIError(status: .badRequest, code: .malformedJSON, field: repeated, message: "the key \(repeated) appears twice in one object")
        }
        do {
            return try WireCodec.decode(type, from: Data(bytes))
        } catch {
            throw APIError(error)
        }
    }
}
