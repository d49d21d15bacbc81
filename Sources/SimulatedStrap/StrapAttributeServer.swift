public import BlueZHeartRate

/// The simulated strap's attribute table and its answers to ATT requests. Sans-I/O: a request PDU
/// in, a response PDU out.
///
/// Handles (fixed, like a real strap's firmware):
/// 1 Heart Rate service 0x180D (to 6) · 2 declaration · 3 Measurement 0x2A37 (notify) · 4 its CCCD ·
/// 5 declaration · 6 Body Sensor Location 0x2A38 (read) ·
/// 7 Battery service 0x180F (to 10) · 8 declaration · 9 Battery Level 0x2A19 (read, notify) · 10 its CCCD.
public struct StrapAttributeServer: Sendable {
    public static let measurementHandle: UInt16 = 3
    public static let measurementCCCDHandle: UInt16 = 4
    public static let locationHandle: UInt16 = 6
    public static let batteryHandle: UInt16 = 9
    public static let batteryCCCDHandle: UInt16 = 10

    struct Attribute {
        var handle: UInt16
        var type: BluetoothUUID
        /// For a service declaration, the group's end.
        var groupEnd: UInt16?
        var readable: Bool
    }

    public var mtu: UInt16 = 23
    public var measurementCCCD: UInt16 = 0
    public var batteryCCCD: UInt16 = 0
    public var location: BodySensorLocation
    public var batteryPercent: Int

    let attributes: [Attribute] = [
        Attribute(handle: 1, type: .primaryService, groupEnd: 6, readable: true),
        Attribute(handle: 2, type: .characteristic, readable: true),
        Attribute(handle: 3, type: HeartRateMeasurement.uuid, readable: false),
        Attribute(handle: 4, type: .clientCharacteristicConfiguration, readable: true),
        Attribute(handle: 5, type: .characteristic, readable: true),
        Attribute(handle: 6, type: BodySensorLocation.uuid, readable: true),
        Attribute(handle: 7, type: .primaryService, groupEnd: 10, readable: true),
        Attribute(handle: 8, type: .characteristic, readable: true),
        Attribute(handle: 9, type: BatteryLevel.uuid, readable: true),
        Attribute(handle: 10, type: .clientCharacteristicConfiguration, readable: true),
    ]

    public init(location: BodySensorLocation = .chest, batteryPercent: Int = 87) {
        self.location = location
        self.batteryPercent = batteryPercent
    }

    public var notifyingMeasurements: Bool { measurementCCCD & 0x0001 != 0 }
    public var notifyingBattery: Bool { batteryCCCD & 0x0001 != 0 }

    func value(of handle: UInt16) -> [UInt8] {
        switch handle {
        case 1: le(0x180D)
        case 2: [0x10] + le(3) + le(0x2A37)
        case 4: le(measurementCCCD)
        case 5: [0x02] + le(6) + le(0x2A38)
        case 6: location.encoded
        case 7: le(0x180F)
        case 8: [0x12] + le(9) + le(0x2A19)
        case 9: BatteryLevel.encode(batteryPercent)
        case 10: le(batteryCCCD)
        default: []
        }
    }

    /// The response to one client PDU, or nil when none is due (commands, confirmations).
    public mutating func respond(to request: ATTPDU) -> ATTPDU? {
        switch request {
        case .exchangeMTURequest(let clientMTU):
            mtu = max(23, min(clientMTU, 185))
            return .exchangeMTUResponse(serverMTU: 185)
        case .readByGroupTypeRequest(let start, let end, let type):
            guard type == .primaryService else { return error(request, start, .unsupportedGroupType) }
            let found = attributes.filter { $0.type == .primaryService && $0.handle >= start && $0.handle <= end }
            guard let first = found.first, start <= end, start > 0 else { return error(request, start, .attributeNotFound) }
            let size = value(of: first.handle).count
            let entries = found.prefix { value(of: $0.handle).count == size }.map {
                ATTPDU.GroupValue(handle: $0.handle, endGroupHandle: $0.groupEnd ?? $0.handle, value: value(of: $0.handle))
            }
            return .readByGroupTypeResponse(fitting(entries, entrySize: 4 + size))
        case .readByTypeRequest(let start, let end, let type):
            let found = attributes.filter { $0.type == type && $0.handle >= start && $0.handle <= end && $0.readable }
            guard let first = found.first, start <= end, start > 0 else { return error(request, start, .attributeNotFound) }
            let size = value(of: first.handle).count
            let entries = found.prefix { value(of: $0.handle).count == size }.map {
                ATTPDU.HandleValue(handle: $0.handle, value: value(of: $0.handle))
            }
            return .readByTypeResponse(fitting(entries, entrySize: 2 + size))
        case .findInformationRequest(let start, let end):
            let found = attributes.filter { $0.handle >= start && $0.handle <= end }
            guard !found.isEmpty, start <= end, start > 0 else { return error(request, start, .attributeNotFound) }
            return .findInformationResponse(fitting(found.map { ATTPDU.HandleUUID(handle: $0.handle, uuid: $0.type) }, entrySize: 4))
        case .readRequest(let handle):
            guard let attribute = attributes.first(where: { $0.handle == handle }) else { return error(request, handle, .invalidHandle) }
            guard attribute.readable else { return error(request, handle, .readNotPermitted) }
            return .readResponse(value: value(of: handle))
        case .writeRequest(let handle, let value):
            switch handle {
            case Self.measurementCCCDHandle, Self.batteryCCCDHandle:
                guard value.count == 2 else { return error(request, handle, ATTErrorCode(rawValue: 0x0D)) }
                let config = UInt16(value[0]) | UInt16(value[1]) << 8
                if handle == Self.measurementCCCDHandle { measurementCCCD = config } else { batteryCCCD = config }
                return .writeResponse
            default:
                let known = attributes.contains { $0.handle == handle }
                return error(request, handle, known ? .writeNotPermitted : .invalidHandle)
            }
        case .writeCommand, .handleValueConfirmation:
            return nil
        case .errorResponse, .exchangeMTUResponse, .findInformationResponse, .readByTypeResponse, .readResponse,
            .readByGroupTypeResponse, .writeResponse, .handleValueNotification, .handleValueIndication:
            // Responses and server PDUs sent to a server: the strap has no client side.
            return nil
        }
    }

    private func fitting<T>(_ entries: [T], entrySize: Int) -> [T] {
        Array(entries.prefix(max(1, (Int(mtu) - 2) / max(1, entrySize))))
    }

    private func error(_ request: ATTPDU, _ handle: UInt16, _ code: ATTErrorCode) -> ATTPDU {
        .errorResponse(requestOpcode: request.opcode, handle: handle, error: code)
    }

    private func le(_ value: UInt16) -> [UInt8] { [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)] }
}
