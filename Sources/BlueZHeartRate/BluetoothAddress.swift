import TrackMeCore

/// A Bluetooth device address, most significant octet first as people write it
/// ("00:AA:01:01:00:01"). The C `bdaddr_t` (least significant first) stays inside the socket
/// shells.
public struct BluetoothAddress: Hashable, Sendable, CustomStringConvertible, Codable {
    /// Six octets, most significant first.
    public let octets: [UInt8]

    public init?(octets: [UInt8]) {
        guard octets.count == 6 else { return nil }
        self.octets = octets
    }

    /// Parses "AA:BB:CC:DD:EE:FF" (case-insensitive, `:` or `-` separators).
    public init?(_ text: String) {
        let parts = text.split(whereSeparator: { $0 == ":" || $0 == "-" })
        guard parts.count == 6 else { return nil }
        var octets: [UInt8] = []
        for part in parts {
            guard part.count == 2, let value = UInt8(part, radix: 16) else { return nil }
            octets.append(value)
        }
        self.octets = octets
    }

    /// From the six little-endian bytes of an HCI event or `bdaddr_t`.
    init?(littleEndian bytes: [UInt8]) {
        self.init(octets: bytes.reversed())
    }

    var littleEndianBytes: [UInt8] { octets.reversed() }

    public var description: String { Hex.encode(octets, separator: ":").uppercased() }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let address = BluetoothAddress(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a Bluetooth address: \(text)"))
        }
        self = address
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// LE address type: public (IEEE-assigned) or random (static or private).
public enum BluetoothAddressType: String, Hashable, Sendable, Codable, CaseIterable {
    case `public`
    case random
}
