import TrackMeCore

/// One ATT protocol data unit (Bluetooth Core 5.x, Vol 3 Part F, 3.4): the ones a GATT client
/// of a heart-rate strap and the simulated strap use. Sans-I/O: parse from and encode to bytes.
public enum ATTPDU: Hashable, Sendable {
    case errorResponse(requestOpcode: UInt8, handle: UInt16, error: ATTErrorCode)
    case exchangeMTURequest(clientMTU: UInt16)
    case exchangeMTUResponse(serverMTU: UInt16)
    case findInformationRequest(start: UInt16, end: UInt16)
    case findInformationResponse([HandleUUID])
    case readByTypeRequest(start: UInt16, end: UInt16, type: BluetoothUUID)
    case readByTypeResponse([HandleValue])
    case readRequest(handle: UInt16)
    case readResponse(value: [UInt8])
    case readByGroupTypeRequest(start: UInt16, end: UInt16, type: BluetoothUUID)
    case readByGroupTypeResponse([GroupValue])
    case writeRequest(handle: UInt16, value: [UInt8])
    case writeResponse
    case writeCommand(handle: UInt16, value: [UInt8])
    case handleValueNotification(handle: UInt16, value: [UInt8])
    case handleValueIndication(handle: UInt16, value: [UInt8])
    case handleValueConfirmation

    public struct HandleUUID: Hashable, Sendable {
        public var handle: UInt16
        public var uuid: BluetoothUUID
        public init(handle: UInt16, uuid: BluetoothUUID) {
            self.handle = handle
            self.uuid = uuid
        }
    }

    public struct HandleValue: Hashable, Sendable {
        public var handle: UInt16
        public var value: [UInt8]
        public init(handle: UInt16, value: [UInt8]) {
            self.handle = handle
            self.value = value
        }
    }

    public struct GroupValue: Hashable, Sendable {
        public var handle: UInt16
        public var endGroupHandle: UInt16
        public var value: [UInt8]
        public init(handle: UInt16, endGroupHandle: UInt16, value: [UInt8]) {
            self.handle = handle
            self.endGroupHandle = endGroupHandle
            self.value = value
        }
    }

    public enum Opcode {
        public static let errorResponse: UInt8 = 0x01
        public static let exchangeMTURequest: UInt8 = 0x02
        public static let exchangeMTUResponse: UInt8 = 0x03
        public static let findInformationRequest: UInt8 = 0x04
        public static let findInformationResponse: UInt8 = 0x05
        public static let readByTypeRequest: UInt8 = 0x08
        public static let readByTypeResponse: UInt8 = 0x09
        public static let readRequest: UInt8 = 0x0A
        public static let readResponse: UInt8 = 0x0B
        public static let readByGroupTypeRequest: UInt8 = 0x10
        public static let readByGroupTypeResponse: UInt8 = 0x11
        public static let writeRequest: UInt8 = 0x12
        public static let writeResponse: UInt8 = 0x13
        public static let handleValueNotification: UInt8 = 0x1B
        public static let handleValueIndication: UInt8 = 0x1D
        public static let handleValueConfirmation: UInt8 = 0x1E
        public static let writeCommand: UInt8 = 0x52
    }

    public var opcode: UInt8 {
        switch self {
        case .errorResponse: Opcode.errorResponse
        case .exchangeMTURequest: Opcode.exchangeMTURequest
        case .exchangeMTUResponse: Opcode.exchangeMTUResponse
        case .findInformationRequest: Opcode.findInformationRequest
        case .findInformationResponse: Opcode.findInformationResponse
        case .readByTypeRequest: Opcode.readByTypeRequest
        case .readByTypeResponse: Opcode.readByTypeResponse
        case .readRequest: Opcode.readRequest
        case .readResponse: Opcode.readResponse
        case .readByGroupTypeRequest: Opcode.readByGroupTypeRequest
        case .readByGroupTypeResponse: Opcode.readByGroupTypeResponse
        case .writeRequest: Opcode.writeRequest
        case .writeResponse: Opcode.writeResponse
        case .writeCommand: Opcode.writeCommand
        case .handleValueNotification: Opcode.handleValueNotification
        case .handleValueIndication: Opcode.handleValueIndication
        case .handleValueConfirmation: Opcode.handleValueConfirmation
        }
    }

    /// Parses one PDU. Never traps; throws with the offset and the field expected there.
    public init(bytes: [UInt8]) throws(PayloadDecodingError) {
        var r = ByteReader(bytes)
        let opcode = try r.readUInt8("ATT opcode")
        switch opcode {
        case Opcode.errorResponse:
            let request = try r.readUInt8("request opcode in error")
            let handle = try r.readUInt16("handle in error")
            let code = try r.readUInt8("error code")
            self = .errorResponse(requestOpcode: request, handle: handle, error: ATTErrorCode(rawValue: code))
        case Opcode.exchangeMTURequest:
            self = .exchangeMTURequest(clientMTU: try r.readUInt16("client rx MTU"))
        case Opcode.exchangeMTUResponse:
            self = .exchangeMTUResponse(serverMTU: try r.readUInt16("server rx MTU"))
        case Opcode.findInformationRequest:
            let (start, end) = try Self.readRange(&r)
            self = .findInformationRequest(start: start, end: end)
        case Opcode.findInformationResponse:
            let formatOffset = r.offset
            let format = try r.readUInt8("find information format")
            let uuidLength: Int
            switch format {
            case 1: uuidLength = 2
            case 2: uuidLength = 16
            default:
                throw PayloadDecodingError(code: .invalidValue, offset: formatOffset, expected: "format 1 or 2, found \(format)")
            }
            var entries: [HandleUUID] = []
            repeat {
                let handle = try r.readUInt16("attribute handle")
                let uuidOffset = r.offset
                let uuid = try BluetoothUUID(littleEndian: r.readBytes(uuidLength, "attribute type UUID"), offset: uuidOffset)
                entries.append(HandleUUID(handle: handle, uuid: uuid))
            } while !r.isAtEnd
            self = .findInformationResponse(entries)
        case Opcode.readByTypeRequest:
            let (start, end) = try Self.readRange(&r)
            self = .readByTypeRequest(start: start, end: end, type: try Self.readUUID(&r))
        case Opcode.readByTypeResponse:
            let length = try Self.readLength(&r, minimum: 2)
            var entries: [HandleValue] = []
            repeat {
                let handle = try r.readUInt16("attribute handle")
                entries.append(HandleValue(handle: handle, value: try r.readBytes(length - 2, "attribute value")))
            } while !r.isAtEnd
            self = .readByTypeResponse(entries)
        case Opcode.readRequest:
            self = .readRequest(handle: try r.readUInt16("attribute handle"))
        case Opcode.readResponse:
            self = .readResponse(value: r.readRest())
        case Opcode.readByGroupTypeRequest:
            let (start, end) = try Self.readRange(&r)
            self = .readByGroupTypeRequest(start: start, end: end, type: try Self.readUUID(&r))
        case Opcode.readByGroupTypeResponse:
            let length = try Self.readLength(&r, minimum: 4)
            var entries: [GroupValue] = []
            repeat {
                let handle = try r.readUInt16("attribute handle")
                let end = try r.readUInt16("end group handle")
                entries.append(GroupValue(handle: handle, endGroupHandle: end, value: try r.readBytes(length - 4, "attribute value")))
            } while !r.isAtEnd
            self = .readByGroupTypeResponse(entries)
        case Opcode.writeRequest:
            self = .writeRequest(handle: try r.readUInt16("attribute handle"), value: r.readRest())
        case Opcode.writeResponse:
            self = .writeResponse
        case Opcode.writeCommand:
            self = .writeCommand(handle: try r.readUInt16("attribute handle"), value: r.readRest())
        case Opcode.handleValueNotification:
            self = .handleValueNotification(handle: try r.readUInt16("attribute handle"), value: r.readRest())
        case Opcode.handleValueIndication:
            self = .handleValueIndication(handle: try r.readUInt16("attribute handle"), value: r.readRest())
        case Opcode.handleValueConfirmation:
            self = .handleValueConfirmation
        default:
            throw PayloadDecodingError(code: .unknownOpcode, offset: 0, expected: "a known ATT opcode, found 0x\(Hex.byte(opcode))")
        }
        try r.expectEnd("ATT PDU 0x\(Hex.byte(opcode))")
    }

    /// The PDU's bytes on the bearer.
    public var encoded: [UInt8] {
        var b: [UInt8] = [opcode]
        switch self {
        case .errorResponse(let request, let handle, let error):
            b.append(request)
            b.appendLittleEndian(handle)
            b.append(error.rawValue)
        case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
            b.appendLittleEndian(mtu)
        case .findInformationRequest(let start, let end):
            b.appendLittleEndian(start)
            b.appendLittleEndian(end)
        case .findInformationResponse(let entries):
            let wide = entries.contains { if case .bits128 = $0.uuid { true } else { false } }
            b.append(wide ? 2 : 1)
            for entry in entries {
                b.appendLittleEndian(entry.handle)
                b += wide ? entry.uuid.bytes128 : entry.uuid.littleEndianBytes
            }
        case .readByTypeRequest(let start, let end, let type), .readByGroupTypeRequest(let start, let end, let type):
            b.appendLittleEndian(start)
            b.appendLittleEndian(end)
            b += type.littleEndianBytes
        case .readByTypeResponse(let entries):
            b.append(UInt8(clamping: 2 + (entries.first?.value.count ?? 0)))
            for entry in entries {
                b.appendLittleEndian(entry.handle)
                b += entry.value
            }
        case .readRequest(let handle):
            b.appendLittleEndian(handle)
        case .readResponse(let value):
            b += value
        case .readByGroupTypeResponse(let entries):
            b.append(UInt8(clamping: 4 + (entries.first?.value.count ?? 0)))
            for entry in entries {
                b.appendLittleEndian(entry.handle)
                b.appendLittleEndian(entry.endGroupHandle)
                b += entry.value
            }
        case .writeRequest(let handle, let value), .writeCommand(let handle, let value),
            .handleValueNotification(let handle, let value), .handleValueIndication(let handle, let value):
            b.appendLittleEndian(handle)
            b += value
        case .writeResponse, .handleValueConfirmation:
            break
        }
        return b
    }

    private static func readRange(_ r: inout ByteReader) throws(PayloadDecodingError) -> (UInt16, UInt16) {
        (try r.readUInt16("starting handle"), try r.readUInt16("ending handle"))
    }

    private static func readUUID(_ r: inout ByteReader) throws(PayloadDecodingError) -> BluetoothUUID {
        let offset = r.offset
        guard r.remaining == 2 || r.remaining == 16 else {
            throw PayloadDecodingError(code: .truncated, offset: offset, expected: "attribute type UUID (2 or 16 bytes), found \(r.remaining)")
        }
        return try BluetoothUUID(littleEndian: r.readRest(), offset: offset)
    }

    private static func readLength(_ r: inout ByteReader, minimum: Int) throws(PayloadDecodingError) -> Int {
        let offset = r.offset
        let length = Int(try r.readUInt8("entry length"))
        guard length >= minimum else {
            throw PayloadDecodingError(code: .invalidValue, offset: offset, expected: "entry length of at least \(minimum), found \(length)")
        }
        guard r.remaining >= length, r.remaining.isMultiple(of: length) else {
            throw PayloadDecodingError(
                code: .truncated,
                offset: r.offset,
                expected: "whole entries of \(length) bytes, found \(r.remaining) bytes"
            )
        }
        return length
    }
}

extension BluetoothUUID {
    /// The 128-bit on-air form, expanding a 16-bit UUID over the SIG base.
    var bytes128: [UInt8] {
        switch self {
        case .bits16(let value):
            var bytes = Self.base
            bytes[12] = UInt8(truncatingIfNeeded: value)
            bytes[13] = UInt8(truncatingIfNeeded: value >> 8)
            return bytes
        case .bits128(let bytes): return bytes
        }
    }
}

/// An ATT error code (Core Vol 3 Part F, 3.4.1.1).
public struct ATTErrorCode: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let invalidHandle = ATTErrorCode(rawValue: 0x01)
    public static let readNotPermitted = ATTErrorCode(rawValue: 0x02)
    public static let writeNotPermitted = ATTErrorCode(rawValue: 0x03)
    public static let invalidPDU = ATTErrorCode(rawValue: 0x04)
    public static let insufficientAuthentication = ATTErrorCode(rawValue: 0x05)
    public static let requestNotSupported = ATTErrorCode(rawValue: 0x06)
    public static let attributeNotFound = ATTErrorCode(rawValue: 0x0A)
    public static let unlikelyError = ATTErrorCode(rawValue: 0x0E)
    public static let unsupportedGroupType = ATTErrorCode(rawValue: 0x10)

    public var description: String { "0x" + Hex.byte(rawValue) }
}
