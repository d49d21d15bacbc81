import TrackMeCore

/// The AD structures of an advertisement or scan response that matter for finding a strap.
public struct AdvertisingData: Hashable, Sendable {
    public var flags: UInt8?
    /// 16-bit service UUIDs, from complete and incomplete lists.
    public var serviceUUIDs: [UInt16] = []
    /// Whether a list was marked complete.
    public var serviceListComplete = false
    public var localName: String?
    public var localNameComplete = false
    /// TX power level in dBm.
    public var txPower: Int?

    public init() {}

    enum ADType {
        static let flags: UInt8 = 0x01
        static let incomplete16: UInt8 = 0x02
        static let complete16: UInt8 = 0x03
        static let shortName: UInt8 = 0x08
        static let completeName: UInt8 = 0x09
        static let txPower: UInt8 = 0x0A
    }

    /// Parses AD structures (length, type, data). A zero length ends the data early (padding), as
    /// the specification allows; other types are skipped.
    public init(bytes: [UInt8]) throws(PayloadDecodingError) {
        var reader = ByteReader(bytes)
        while !reader.isAtEnd {
            let start = reader.offset
            let length = Int(try reader.readUInt8("AD structure length"))
            if length == 0 { break }
            let type = try reader.readUInt8("AD type")
            let data = try reader.readBytes(length - 1, "AD data for type 0x\(Hex.byte(type))")
            switch type {
            case ADType.flags:
                flags = data.first
            case ADType.incomplete16, ADType.complete16:
                guard data.count.isMultiple(of: 2) else {
                    throw PayloadDecodingError(code: .invalidValue, offset: start, expected: "whole 16-bit UUIDs, found \(data.count) bytes")
                }
                serviceUUIDs += stride(from: 0, to: data.count, by: 2).map { UInt16(data[$0]) | UInt16(data[$0 + 1]) << 8 }
                if type == ADType.complete16 { serviceListComplete = true }
            case ADType.shortName, ADType.completeName:
                // Only a complete name replaces a short one.
                if localName == nil || type == ADType.completeName {
                    localName = String(decoding: data, as: UTF8.self)
                    localNameComplete = type == ADType.completeName
                }
            case ADType.txPower:
                txPower = data.first.map { Int(Int8(bitPattern: $0)) }
            default:
                continue
            }
        }
    }

    /// Encodes the fields present (for tests and the simulation).
    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        if let flags { bytes += [2, ADType.flags, flags] }
        if !serviceUUIDs.isEmpty {
            bytes += [UInt8(1 + 2 * serviceUUIDs.count), serviceListComplete ? ADType.complete16 : ADType.incomplete16]
            for uuid in serviceUUIDs { bytes.appendLittleEndian(uuid) }
        }
        if let localName {
            let utf8 = Array(localName.utf8)
            bytes += [UInt8(1 + utf8.count), localNameComplete ? ADType.completeName : ADType.shortName] + utf8
        }
        if let txPower { bytes += [2, ADType.txPower, UInt8(bitPattern: Int8(clamping: txPower))] }
        return bytes
    }
}

/// One LE Advertising Report (HCI LE Meta event 0x3E, subevent 0x02).
public struct AdvertisingReport: Hashable, Sendable {
    /// ADV_IND 0, ADV_DIRECT_IND 1, ADV_SCAN_IND 2, ADV_NONCONN_IND 3, SCAN_RSP 4.
    public var eventType: UInt8
    public var address: BluetoothAddress
    public var addressType: BluetoothAddressType
    public var data: AdvertisingData
    /// dBm; 127 means not available.
    public var rssi: Int

    public init(eventType: UInt8, address: BluetoothAddress, addressType: BluetoothAddressType, data: AdvertisingData, rssi: Int) {
        self.eventType = eventType
        self.address = address
        self.addressType = addressType
        self.data = data
        self.rssi = rssi
    }

    static let packetTypeEvent: UInt8 = 0x04
    static let eventLEMeta: UInt8 = 0x3E
    static let subeventAdvertisingReport: UInt8 = 0x02

    /// Parses an HCI event packet as read from an HCI socket (packet type 0x04 first). Other
    /// events give an empty list; a broken advertising report throws.
    public static func reports(fromHCIPacket bytes: [UInt8]) throws(PayloadDecodingError) -> [AdvertisingReport] {
        var r = ByteReader(bytes)
        guard try r.readUInt8("HCI packet type") == packetTypeEvent else { return [] }
        let event = try r.readUInt8("HCI event code")
        let lengthOffset = r.offset
        let length = Int(try r.readUInt8("HCI parameter length"))
        guard r.remaining == length else {
            throw PayloadDecodingError(code: .truncated, offset: lengthOffset, expected: "\(length) parameter bytes, found \(r.remaining)")
        }
        guard event == eventLEMeta, try r.readUInt8("LE subevent") == subeventAdvertisingReport else { return [] }
        let count = Int(try r.readUInt8("number of reports"))
        var reports: [AdvertisingReport] = []
        // Linux and real controllers lay reports out one after another (as BlueZ's
        // le_advertising_info), which for the usual single report is also the spec's layout.
        for _ in 0..<count {
            let eventType = try r.readUInt8("advertising event type")
            let typeOffset = r.offset
            let rawType = try r.readUInt8("address type")
            let addressType: BluetoothAddressType
            switch rawType {
            case 0x00, 0x02: addressType = .public
            case 0x01, 0x03: addressType = .random
            default: throw PayloadDecodingError(code: .invalidValue, offset: typeOffset, expected: "address type 0-3, found \(rawType)")
            }
            let addressBytes = try r.readBytes(6, "advertiser address")
            guard let address = BluetoothAddress(littleEndian: addressBytes) else {
                throw PayloadDecodingError(code: .invalidValue, offset: typeOffset + 1, expected: "6-byte address")
            }
            let dataLength = Int(try r.readUInt8("advertising data length"))
            let dataOffset = r.offset
            let dataBytes = try r.readBytes(dataLength, "advertising data")
            let data: AdvertisingData
            do {
                data = try AdvertisingData(bytes: dataBytes)
            } catch {
                throw PayloadDecodingError(code: error.code, offset: dataOffset + error.offset, expected: error.expected)
            }
            let rssi = Int(Int8(bitPattern: try r.readUInt8("RSSI")))
            reports.append(AdvertisingReport(eventType: eventType, address: address, addressType: addressType, data: data, rssi: rssi))
        }
        try r.expectEnd("LE advertising report event")
        return reports
    }

    /// Encodes as an HCI event packet holding this one report (for tests and simulations).
    public var hciPacket: [UInt8] {
        let data = self.data.encoded
        var parameters: [UInt8] = [Self.subeventAdvertisingReport, 1, eventType, addressType == .public ? 0 : 1]
        parameters += address.littleEndianBytes
        parameters.append(UInt8(data.count))
        parameters += data
        parameters.append(UInt8(bitPattern: Int8(clamping: rssi)))
        return [Self.packetTypeEvent, Self.eventLEMeta, UInt8(parameters.count)] + parameters
    }
}

/// A strap found by scanning: a device advertising the Heart Rate service.
public struct DiscoveredStrap: Hashable, Sendable, Codable {
    public var address: BluetoothAddress
    public var addressType: BluetoothAddressType
    public var name: String?
    /// Strongest RSSI seen, dBm; `rssiUnavailable` when the controller could not measure it.
    public var rssi: Int
    /// 16-bit service UUIDs advertised.
    public var services: [UInt16]

    /// The RSSI an advertising report carries when the controller has none (Core spec Vol 4,
    /// Part E, 7.7.65.2: 127 means "not available").
    public static let rssiUnavailable = 127

    /// `rssi` if the controller measured it.
    public var signalStrength: Int? { rssi == Self.rssiUnavailable ? nil : rssi }

    public init(address: BluetoothAddress, addressType: BluetoothAddressType, name: String?, rssi: Int, services: [UInt16]) {
        self.address = address
        self.addressType = addressType
        self.name = name
        self.rssi = rssi
        self.services = services
    }

    enum CodingKeys: String, CodingKey {
        case address, name, rssi, services
        case addressType = "address_type"
    }
}

/// Merges advertising reports per device (names often come only in scan responses) and keeps
/// the devices offering the Heart Rate service. A pure value.
public struct StrapScanResults: Sendable {
    private var devices: [BluetoothAddress: DiscoveredStrap] = [:]
    private var order: [BluetoothAddress] = []

    public init() {}

    public mutating func add(_ report: AdvertisingReport) {
        var device =
            devices[report.address]
            ?? DiscoveredStrap(address: report.address, addressType: report.addressType, name: nil, rssi: report.rssi, services: [])
        if device.name == nil || report.data.localNameComplete { device.name = report.data.localName ?? device.name }
        for uuid in report.data.serviceUUIDs where !device.services.contains(uuid) { device.services.append(uuid) }
        if report.rssi != DiscoveredStrap.rssiUnavailable && (device.signalStrength == nil || report.rssi > device.rssi) {
            device.rssi = report.rssi
        }
        if devices[report.address] == nil { order.append(report.address) }
        devices[report.address] = device
    }

    /// Devices advertising 0x180D, in the order first seen.
    public var straps: [DiscoveredStrap] {
        allDevices.filter { $0.services.contains(0x180D) }
    }

    /// Every LE device seen, in the order first seen (for diagnosing a strap that does not list
    /// 0x180D in its advertisement).
    public var allDevices: [DiscoveredStrap] {
        order.compactMap { devices[$0] }
    }

    /// The strap with the strongest signal (one without a measured signal comes last).
    public var strongest: DiscoveredStrap? {
        straps.max { ($0.signalStrength ?? Int.min) < ($1.signalStrength ?? Int.min) }
    }
}
