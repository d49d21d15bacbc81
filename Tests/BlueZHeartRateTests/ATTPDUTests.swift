import BlueZHeartRate
import Testing

@Suite struct ATTPDUTests {
    static let samples: [ATTPDU] = [
        .errorResponse(requestOpcode: 0x10, handle: 0x0007, error: .attributeNotFound),
        .exchangeMTURequest(clientMTU: 517),
        .exchangeMTUResponse(serverMTU: 23),
        .findInformationRequest(start: 4, end: 0xFFFF),
        .findInformationResponse([.init(handle: 4, uuid: .clientCharacteristicConfiguration), .init(handle: 5, uuid: BluetoothUUID(0x2901))]),
        .findInformationResponse([
            .init(handle: 9, uuid: .bits128([0x9E, 0xCA, 0xDC, 0x24, 0x0E, 0xE5, 0xA9, 0xE0, 0x93, 0xF3, 0xA3, 0xB5, 0x01, 0x00, 0x40, 0x6E]))
        ]),
        .readByTypeRequest(start: 1, end: 6, type: .characteristic),
        .readByTypeResponse([.init(handle: 2, value: [0x10, 0x03, 0x00, 0x37, 0x2A]), .init(handle: 5, value: [0x02, 0x06, 0x00, 0x38, 0x2A])]),
        .readRequest(handle: 6),
        .readResponse(value: [0x01]),
        .readResponse(value: []),
        .readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService),
        .readByGroupTypeResponse([
            .init(handle: 1, endGroupHandle: 6, value: [0x0D, 0x18]), .init(handle: 7, endGroupHandle: 10, value: [0x0F, 0x18]),
        ]),
        .writeRequest(handle: 4, value: [0x01, 0x00]),
        .writeResponse,
        .writeCommand(handle: 4, value: [0x02, 0x00]),
        .handleValueNotification(handle: 3, value: [0x16, 0x3C, 0x11, 0x04]),
        .handleValueIndication(handle: 3, value: [0x06, 0x3C]),
        .handleValueConfirmation,
    ]

    @Test(arguments: samples)
    func roundTrips(_ pdu: ATTPDU) throws {
        #expect(try ATTPDU(bytes: pdu.encoded) == pdu)
        #expect(pdu.encoded.first == pdu.opcode)
    }

    /// Every proper prefix fails to parse, except where the PDU stays whole: values at the end may
    /// be empty, and a list may end after any whole entry.
    @Test(arguments: samples)
    func truncatedPDUsThrow(_ pdu: ATTPDU) throws {
        let bytes = pdu.encoded
        let fixedLength: Int =
            switch pdu {
            case .readResponse, .writeResponse, .handleValueConfirmation: 1
            case .writeRequest, .writeCommand, .handleValueNotification, .handleValueIndication: 3
            default: bytes.count
            }
        let entrySize: Int? =
            switch pdu {
            case .findInformationResponse: bytes[1] == 1 ? 4 : 18
            case .readByTypeResponse, .readByGroupTypeResponse: Int(bytes[1])
            default: nil
            }
        for length in 0..<fixedLength {
            if let entrySize, length > 2, (length - 2).isMultiple(of: entrySize) {
                #expect(throws: Never.self) { try ATTPDU(bytes: Array(bytes.prefix(length))) }
                continue
            }
            #expect(throws: PayloadDecodingError.self, "prefix of \(length) bytes") { try ATTPDU(bytes: Array(bytes.prefix(length))) }
        }
    }

    /// Bytes as BlueZ's btgatt-server sends them (checked against btmon's decoding).
    @Test func parsesKnownWireBytes() throws {
        #expect(try ATTPDU(bytes: [0x01, 0x10, 0x07, 0x00, 0x0A]) == .errorResponse(requestOpcode: 0x10, handle: 7, error: .attributeNotFound))
        #expect(
            try ATTPDU(bytes: [0x11, 0x06, 0x01, 0x00, 0x05, 0x00, 0x00, 0x18])
                == .readByGroupTypeResponse([.init(handle: 1, endGroupHandle: 5, value: [0x00, 0x18])])
        )
        #expect(try ATTPDU(bytes: [0x1B, 0x03, 0x00, 0x06, 0x48]) == .handleValueNotification(handle: 3, value: [0x06, 0x48]))
    }

    @Test func sixteenBitUUIDInLongFormIsShortened() throws {
        let long: [UInt8] = [
            0x10, 0x01, 0x00, 0xFF, 0xFF, 0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x00, 0x28, 0x00, 0x00,
        ]
        #expect(try ATTPDU(bytes: long) == .readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService))
        let expanded = ATTPDU.findInformationResponse([.init(handle: 4, uuid: .clientCharacteristicConfiguration)]).encoded
        #expect(expanded.count == 1 + 1 + 2 + 2)
    }

    @Test func inconsistentLengthsThrow() throws {
        // Read By Type Response with entry length 7 but 6 bytes of data.
        let error = try #require(throws: PayloadDecodingError.self) { try ATTPDU(bytes: [0x09, 0x07, 0x02, 0x00, 0x10, 0x03, 0x00, 0x37]) }
        #expect(error.code == .truncated)
        #expect(error.offset == 2)
        #expect(throws: PayloadDecodingError.self) { try ATTPDU(bytes: [0x11, 0x03, 0x01, 0x00, 0x05]) }
        #expect(throws: PayloadDecodingError.self) { try ATTPDU(bytes: [0x05, 0x03, 0x04, 0x00, 0x02, 0x29]) }
        #expect(throws: PayloadDecodingError.self) { try ATTPDU(bytes: [0x13, 0x00]) }
        let unknown = try #require(throws: PayloadDecodingError.self) { try ATTPDU(bytes: [0xEE]) }
        #expect(unknown.code == .unknownOpcode)
    }
}
