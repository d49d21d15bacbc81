import TrackMeCore

/// A GATT/ATT UUID: a 16-bit SIG-assigned number or a full 128-bit UUID (stored little-endian,
/// as on the air).
public enum BluetoothUUID: Hashable, Sendable, CustomStringConvertible {
    case bits16(UInt16)
    case bits128([UInt8])

    public init(_ short: UInt16) { self = .bits16(short) }

    public static let primaryService = BluetoothUUID(0x2800)
    public static let characteristic = BluetoothUUID(0x2803)
    public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)
    public static let heartRateService = BluetoothUUID(0x180D)
    public static let batteryService = BluetoothUUID(0x180F)

    /// The SIG base UUID 0000xxxx-0000-1000-8000-00805F9B34FB, little-endian, xxxx zeroed.
    static let base: [UInt8] = [0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]

    /// Decodes a UUID from 2 or 16 little-endian bytes; a 128-bit form of a SIG UUID becomes
    /// `.bits16`.
    init(littleEndian bytes: [UInt8], offset: Int) throws(PayloadDecodingError) {
        switch bytes.count {
        case 2:
            self = .bits16(UInt16(bytes[0]) | UInt16(bytes[1]) << 8)
        case 16:
            var masked = bytes
            masked[12] = 0
            masked[13] = 0
            if masked == Self.base && bytes[14] == 0 && bytes[15] == 0 {
                self = .bits16(UInt16(bytes[12]) | UInt16(bytes[13]) << 8)
            } else {
                self = .bits128(bytes)
            }
        default:
            throw PayloadDecodingError(code: .invalidValue, offset: offset, expected: "UUID of 2 or 16 bytes, found \(bytes.count)")
        }
    }

    /// The on-air bytes: 2 for a 16-bit UUID, 16 otherwise.
    var littleEndianBytes: [UInt8] {
        switch self {
        case .bits16(let value): [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
        case .bits128(let bytes): bytes
        }
    }

    public var description: String {
        switch self {
        case .bits16(let value): "0x" + Hex.encode([UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]).uppercased()
        case .bits128(let bytes): Hex.encode(bytes.reversed())
        }
    }
}
