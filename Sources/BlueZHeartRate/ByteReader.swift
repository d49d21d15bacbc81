/// Why a byte payload could not be decoded: where it went wrong and what was expected there.
public struct PayloadDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// The payload ended before a field the earlier bytes announced.
        public static let truncated = Code(name: "truncated")
        /// A field holds a value the specification does not allow.
        public static let invalidValue = Code(name: "invalid_value")
        /// Bytes are left over that no field accounts for.
        public static let trailingBytes = Code(name: "trailing_bytes")
        /// The opcode or type byte is not one this decoder knows.
        public static let unknownOpcode = Code(name: "unknown_opcode")
        public var description: String { name }
    }

    public var code: Code
    /// Byte offset in the payload where decoding stopped.
    public var offset: Int
    /// What the decoder expected at `offset`.
    public var expected: String

    public init(code: Code, offset: Int, expected: String) {
        self.code = code
        self.offset = offset
        self.expected = expected
    }

    public var description: String { "\(code) at byte \(offset): expected \(expected)" }
}

/// A bounds-checked little-endian reader over a byte array. A read that does not fit throws
/// without consuming anything.
struct ByteReader {
    let bytes: [UInt8]
    private(set) var offset: Int

    init(_ bytes: [UInt8], offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }
    var isAtEnd: Bool { offset >= bytes.count }

    mutating func readUInt8(_ what: @autoclosure () -> String) throws(PayloadDecodingError) -> UInt8 {
        guard remaining >= 1 else { throw truncated(what(), needing: 1) }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16(_ what: @autoclosure () -> String) throws(PayloadDecodingError) -> UInt16 {
        guard remaining >= 2 else { throw truncated(what(), needing: 2) }
        defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    mutating func readBytes(_ count: Int, _ what: @autoclosure () -> String) throws(PayloadDecodingError) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw truncated(what(), needing: count) }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Everything not read yet.
    mutating func readRest() -> [UInt8] {
        defer { offset = bytes.count }
        return offset < bytes.count ? Array(bytes[offset...]) : []
    }

    func expectEnd(_ what: String) throws(PayloadDecodingError) {
        guard isAtEnd else {
            throw PayloadDecodingError(code: .trailingBytes, offset: offset, expected: "end of \(what), found \(remaining) more byte(s)")
        }
    }

    private func truncated(_ what: String, needing count: Int) -> PayloadDecodingError {
        PayloadDecodingError(
            code: .truncated,
            offset: offset,
            expected: "\(what) (\(count) byte\(count == 1 ? "" : "s")), found \(max(0, remaining))"
        )
    }
}

extension Array where Element == UInt8 {
    mutating func appendLittleEndian(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value))
        append(UInt8(truncatingIfNeeded: value >> 8))
    }
}
