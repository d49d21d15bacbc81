/// Hex text, the project's one way to write and read it: digests and keys on the server and in
/// the store key file, raw PDUs in the link's logs and `trackme-agent hrm-decode`.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Two lowercase digits a byte, `separator` between bytes: "063c1104", "06 3c 11 04".
    public static func encode(_ bytes: some Sequence<UInt8>, separator: String = "") -> String {
        var text: [UInt8] = []
        let between = Array(separator.utf8)
        for byte in bytes {
            if !text.isEmpty { text += between }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// One byte as two lowercase digits: "0a".
    public static func byte(_ byte: UInt8) -> String { encode(CollectionOfOne(byte)) }

    /// The value of one hex digit in either case; nil for any other character.
    public static func digit(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Bytes from hex digits, two a byte, either case; the characters in `ignoring` may stand
    /// anywhere between them (" :" reads "06 3c:11 04"). Nil for any other character or an odd
    /// number of digits.
    public static func decode(_ text: String, ignoring: String = "") -> [UInt8]? {
        let ignored = Set(ignoring.utf8)
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        for character in text.utf8 {
            if ignored.contains(character) { continue }
            guard let value = digit(character) else { return nil }
            values.append(value)
        }
        guard values.count.isMultiple(of: 2) else { return nil }
        return stride(from: 0, to: values.count, by: 2).map { values[$0] << 4 | values[$0 + 1] }
    }
}
