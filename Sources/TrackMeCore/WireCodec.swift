public import Foundation

/// A wire message that could not be read, naming the field that was wrong.
public struct WireFormatError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        case missingField = "missing_field"
        case wrongType = "wrong_type"
        case invalidValue = "invalid_value"
        case malformedJSON = "malformed_json"
    }

    public var code: Code
    /// The path of the field, e.g. `readings[3].hr.bpm`; empty for the document as a whole.
    public var field: String
    public var message: String

    public init(code: Code, field: String, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    public var description: String {
        field.isEmpty ? "\(code.rawValue): \(message)" : "\(code.rawValue) at \(field): \(message)"
    }
}

/// Encodes and decodes wire messages (WIRE.md), turning decoding failures into errors that name
/// the field so that a device or an operator can see at once what was wrong.
public enum WireCodec {
    public static func encode<T: Encodable>(_ value: T) throws -> Data {
        try sortedKeysJSON(value)
    }

    /// The batch the device sends: `WireFastPath`'s canonical text when it has one (the same
    /// bytes, several times cheaper), the generic encoding otherwise.
    public static func encode(_ batch: SyncBatch) throws -> Data {
        if let text = WireFastPath.canonicalJSON(batch) { return Data(text.utf8) }
        return try sortedKeysJSON(batch)
    }

    /// A heartbeat as the device keeps it with a reserved batch: the fast path's text when it
    /// has one (the same bytes), the generic encoding otherwise.
    public static func encode(_ heartbeat: DeviceHeartbeat) throws -> Data {
        if let text = WireFastPath.canonicalJSON(heartbeat) { return Data(text.utf8) }
        return try sortedKeysJSON(heartbeat)
    }

    private static func sortedKeysJSON<T: Encodable>(_ value: T) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(value)
    }

    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(WireFormatError) -> T {
        do {
            return try JSONDecoder().decode(type, from: data)
        } catch let error as DecodingError {
            throw WireFormatError(error)
        } catch {
            throw WireFormatError(code: .malformedJSON, field: "", message: "\(error)")
        }
    }

    /// A stored reading (its wire text): `WireFastPath` when it can, the general decoder otherwise.
    public static func decodeReading(_ text: String) throws(WireFormatError) -> WireReading {
        if let reading = WireFastPath.reading(text) { return reading }
        return try decode(WireReading.self, from: Data(text.utf8))
    }

    /// Renders a coding path as `a.b[2].c`.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var result = ""
        for key in codingPath {
            if let index = key.intValue {
                result += "[\(index)]"
            } else {
                result += result.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return result
    }
}

extension WireFormatError {
    init(_ error: DecodingError) {
        switch error {
        case .keyNotFound(let key, let context):
            self.init(code: .missingField, field: WireCodec.path(context.codingPath + [key]), message: "required field is missing")
        case .typeMismatch(let type, let context):
            self.init(code: .wrongType, field: WireCodec.path(context.codingPath), message: "expected \(type)")
        case .valueNotFound(let type, let context):
            self.init(code: .wrongType, field: WireCodec.path(context.codingPath), message: "expected \(type), found null")
        case .dataCorrupted(let context):
            let field = WireCodec.path(context.codingPath)
            if context.codingPath.isEmpty {
                self.init(code: .malformedJSON, field: field, message: "not valid JSON")
            } else {
                self.init(code: .invalidValue, field: field, message: context.debugDescription)
            }
        @unknown default:
            self.init(code: .malformedJSON, field: "", message: "\(error)")
        }
    }
}
