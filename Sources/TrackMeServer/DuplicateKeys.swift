/// Finds a key that appears twice in one JSON object: `Codable` keeps one of the two silently,
/// so a body with `"seq": 1, "seq": 2` would be stored as whichever it kept. Strict and
/// bounds-checked, it never traps; it gives up (nil) on malformed JSON, which the decoder then
/// names. Keys are compared after their escapes are read (`"a"` and `"\u0061"` are one key).
enum DuplicateKeys {
    /// Deeper than this is left to the decoder.
    static let maximumDepth = 64

    /// The path of the first repeated key (`readings[3].seq`), or nil.
    static func first(in bytes: [UInt8]) -> String? {
        var scanner = Scanner(bytes: bytes)
        guard case .duplicate(let path) = scanner.value(path: "", depth: 0) else { return nil }
        return path
    }

    private enum Outcome {
        case fine
        case duplicate(String)
        case malformed
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        mutating func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                index += 1
            }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func value(path: String, depth: Int) -> Outcome {
            guard depth < DuplicateKeys.maximumDepth else { return .malformed }
            skipSpace()
            guard index < bytes.count else { return .malformed }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                index += 1
                return object(path: path, depth: depth)
            case UInt8(ascii: "["):
                index += 1
                return array(path: path, depth: depth)
            case UInt8(ascii: "\""):
                return string() == nil ? .malformed : .fine
            default:
                // A number, true, false or null: the decoder checks its form.
                let start = index
                while index < bytes.count, !Self.ends(bytes[index]) { index += 1 }
                return index > start ? .fine : .malformed
            }
        }

        static func ends(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") || byte == 0x20 || byte == 0x0A
                || byte == 0x0D || byte == 0x09
        }

        mutating func object(path: String, depth: Int) -> Outcome {
            var seen = Set<[UInt8]>()
            if take(UInt8(ascii: "}")) { return .fine }
            while true {
                skipSpace()
                guard let key = string(), take(UInt8(ascii: ":")) else { return .malformed }
                let name = String(decoding: key, as: UTF8.self)
                let keyPath = path.isEmpty ? name : "\(path).\(name)"
                guard seen.insert(key).inserted else { return .duplicate(keyPath) }
                let inner = value(path: keyPath, depth: depth + 1)
                guard case .fine = inner else { return inner }
                if take(UInt8(ascii: ",")) { continue }
                return take(UInt8(ascii: "}")) ? .fine : .malformed
            }
        }

        mutating func array(path: String, depth: Int) -> Outcome {
            if take(UInt8(ascii: "]")) { return .fine }
            var element = 0
            while true {
                let inner = value(path: "\(path)[\(element)]", depth: depth + 1)
                guard case .fine = inner else { return inner }
                element += 1
                if take(UInt8(ascii: ",")) { continue }
                return take(UInt8(ascii: "]")) ? .fine : .malformed
            }
        }

        /// A string's bytes with its escapes read (UTF-8), the index after its closing quote.
        mutating func string() -> [UInt8]? {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
            index += 1
            var out: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return out
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { return nil }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard let unit = hex4() else { return nil }
                        var scalar = UInt32(unit)
                        if (0xD800..<0xDC00).contains(unit) {
                            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                                return nil
                            }
                            index += 2
                            guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                            scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                        }
                        guard let character = Unicode.Scalar(scalar) else { return nil }
                        out.append(contentsOf: Array(String(Character(character)).utf8))
                    default:
                        return nil
                    }
                default:
                    out.append(byte)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt16? {
            guard index + 4 <= bytes.count else { return nil }
            var value: UInt16 = 0
            for byte in bytes[index..<index + 4] {
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt16(digit)
            }
            index += 4
            return value
        }
    }
}
