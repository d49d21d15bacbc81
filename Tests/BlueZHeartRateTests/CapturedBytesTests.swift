import BlueZHeartRate
import Foundation
import Logging
import Synchronization
import Testing
import TrackMeCore

/// Bytes captured with btmon from a real Linux Bluetooth stack (Debian's 6.1 kernel, two btvirt
/// LE controllers, BlueZ's own btgatt-server and btgatt-client) in the BLE test VM, fed through
/// our parsers. The expected values are what btmon decoded from the same capture
/// (hardware/btmon/*.btmon.txt); the fixture files say which record each line came from.
@Suite struct CapturedBytesTests {
    static let address = BluetoothAddress("00:AA:01:00:00:00")

    // MARK: HCI

    @Test func advertisementOfTheStrapParsesAsBtmonDecodedIt() throws {
        let events = try CapturedFixture.lines("hci-le-advertising-reports.hex")
        try #require(events.count == 2)
        let reports = try AdvertisingReport.reports(fromHCIPacket: CapturedFixture.hciSocketPacket(events[0].bytes))
        try #require(reports.count == 1)
        let report = reports[0]
        #expect(report.eventType == 0x00)  // ADV_IND
        #expect(report.address == Self.address)
        #expect(report.addressType == .public)
        #expect(report.data.flags == 0x06)
        #expect(report.data.serviceUUIDs == [0x180D])
        #expect(report.data.serviceListComplete)
        #expect(report.data.localName == "HeartRate")
        #expect(report.data.localNameComplete)
        #expect(report.data.txPower == nil)
        // btvirt reports no signal strength: 0x7f, "RSSI not available" (Core Vol 4 Part E 7.7.65.2).
        #expect(report.rssi == 127)
    }

    @Test func emptyScanResponseParses() throws {
        let events = try CapturedFixture.lines("hci-le-advertising-reports.hex")
        try #require(events.count == 2)
        let reports = try AdvertisingReport.reports(fromHCIPacket: CapturedFixture.hciSocketPacket(events[1].bytes))
        try #require(reports.count == 1)
        #expect(reports[0].eventType == 0x04)  // SCAN_RSP
        #expect(reports[0].address == Self.address)
        #expect(reports[0].data == AdvertisingData())
        #expect(reports[0].rssi == 127)
    }

    @Test func capturedAdvertisingEventsRoundTrip() throws {
        for event in try CapturedFixture.lines("hci-le-advertising-reports.hex") {
            let packet = CapturedFixture.hciSocketPacket(event.bytes)
            let report = try #require(try AdvertisingReport.reports(fromHCIPacket: packet).first, "\(event.comment)")
            #expect(report.hciPacket == packet, "\(event.comment)")
        }
    }

    @Test func scanOfTheCapturedEventsFindsOneStrapWithoutRSSI() throws {
        var results = StrapScanResults()
        for event in try CapturedFixture.lines("hci-le-advertising-reports.hex") {
            for report in try AdvertisingReport.reports(fromHCIPacket: CapturedFixture.hciSocketPacket(event.bytes)) {
                results.add(report)
            }
        }
        let strap = try #require(results.straps.first)
        #expect(results.straps.count == 1)
        #expect(strap.address == Self.address)
        #expect(strap.name == "HeartRate")
        #expect(strap.services == [0x180D])
        #expect(strap.rssi == 127)
    }

    // MARK: ATT

    @Test func gattDiscoveryPDUsParseAsBtmonDecodedThem() throws {
        let pdus = try CapturedFixture.lines("att-gatt-discovery.hex").map { try ATTPDU(bytes: $0.bytes) }
        let expected: [ATTPDU] = [
            .exchangeMTURequest(clientMTU: 185),
            .exchangeMTUResponse(serverMTU: 23),
            .readByGroupTypeResponse([
                .init(handle: 0x0001, endGroupHandle: 0x0006, value: [0x00, 0x18]),
                .init(handle: 0x0007, endGroupHandle: 0x000A, value: [0x01, 0x18]),
                .init(handle: 0x000B, endGroupHandle: 0x0012, value: [0x0D, 0x18]),
            ]),
            .errorResponse(requestOpcode: ATTPDU.Opcode.readByGroupTypeRequest, handle: 0x0013, error: .attributeNotFound),
            .readByTypeResponse([
                .init(handle: 0x0002, value: [0x82, 0x03, 0x00, 0x00, 0x2A]),
                .init(handle: 0x0005, value: [0x02, 0x06, 0x00, 0x01, 0x2A]),
                .init(handle: 0x0008, value: [0x22, 0x09, 0x00, 0x05, 0x2A]),
            ]),
            .readByTypeResponse([
                .init(handle: 0x000C, value: [0x10, 0x0D, 0x00, 0x37, 0x2A]),
                .init(handle: 0x000F, value: [0x02, 0x10, 0x00, 0x38, 0x2A]),
                .init(handle: 0x0011, value: [0x08, 0x12, 0x00, 0x39, 0x2A]),
            ]),
            .findInformationResponse([.init(handle: 0x0004, uuid: BluetoothUUID(0x2900))]),
            .writeRequest(handle: 0x000E, value: [0x01, 0x00]),
            .writeResponse,
        ]
        #expect(pdus == expected)
    }

    @Test func capturedATTPDUsRoundTrip() throws {
        let lines = try CapturedFixture.lines("att-gatt-discovery.hex") + CapturedFixture.lines("att-hrm-notifications.hex")
        for line in lines {
            #expect(try ATTPDU(bytes: line.bytes).encoded == line.bytes, "\(line.comment)")
        }
    }

    @Test func heartRateNotificationsDecodeAsBtmonShowedThem() throws {
        let lines = try CapturedFixture.lines("att-hrm-notifications.hex")
        var readings: [HeartRateReading] = []
        for line in lines {
            guard case .handleValueNotification(let handle, let value) = try ATTPDU(bytes: line.bytes) else {
                Issue.record("not a notification: \(line.comment)")
                continue
            }
            #expect(handle == 0x000D)
            readings.append(try HeartRateMeasurement.decode(value))
        }
        #expect(
            readings == [
                HeartRateReading(bpm: 108, contact: .detected, energyExpendedKilojoules: 0),
                HeartRateReading(bpm: 110, contact: .detected),
                HeartRateReading(bpm: 116, contact: .detected),
                HeartRateReading(bpm: 125, contact: .detected),
                HeartRateReading(bpm: 105, contact: .detected),
            ]
        )
    }

    // MARK: Our client against btgatt-server's captured answers

    /// The link supervisor runs its whole session (MTU, discovery, CCCD, body sensor location,
    /// subscription) against btgatt-server's answers from the agent's own captured session, and
    /// decodes the captured notifications as btmon did.
    @Test func linkReplaysItsCapturedSessionWithBtgattServer() async throws {
        let session = try CapturedFixture.lines("att-agent-session.hex")
        let server = try CapturedServerBearer(session: session)
        let link = HeartRateLink(
            connector: StrapConnector { .init(bearer: server, address: Self.address) },
            configuration: .init(transactionTimeout: .seconds(20)),
            clock: ContinuousClock(),
            logger: Logger(label: "test.captured"),
            random: { 0.5 }
        )
        var events: [HeartRateEvent] = []
        var readings: [HeartRateReading] = []
        eventLoop: for await event in link.events() {
            events.append(event)
            switch event {
            case .reading(let reading, _):
                readings.append(reading)
                if readings.count == 6 { break eventLoop }
            case .linkState(.unreachable), .linkState(.lost), .malformed:
                break eventLoop  // the session failed; the expectations below say how
            case .linkState, .battery, .bodySensorLocation:
                continue
            }
        }
        #expect(server.unknownRequests.isEmpty, "requests btgatt-server was never asked in the capture")
        #expect(events.contains(.bodySensorLocation(.chest)))
        #expect(events.contains(.linkState(.connected(address: Self.address, gap: nil))))
        #expect(
            readings == [
                HeartRateReading(bpm: 95, contact: .detected, energyExpendedKilojoules: 0),
                HeartRateReading(bpm: 98, contact: .detected),
                HeartRateReading(bpm: 124, contact: .detected),
                HeartRateReading(bpm: 106, contact: .detected),
                HeartRateReading(bpm: 113, contact: .detected),
                HeartRateReading(bpm: 99, contact: .detected),
            ]
        )
    }
}

/// A GATT server made of a captured session: each request gets the response btgatt-server gave
/// to the same request bytes, and the notifications that followed the CCCD write come after the
/// write response. A request the capture never saw gets "Request Not Supported" and is recorded.
final class CapturedServerBearer: ATTBearer {
    let incoming: AsyncThrowingStream<[UInt8], any Error>
    private let continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    /// Request bytes to everything the server sent after it, up to the next request.
    private let answers: [[UInt8]: [[UInt8]]]
    private let unknown = Mutex<[[UInt8]]>([])

    init(session: [CapturedFixture.Line]) throws {
        var answers: [[UInt8]: [[UInt8]]] = [:]
        var request: [UInt8]?
        for line in session {
            if line.comment.contains(" tx:") {
                request = line.bytes
                answers[line.bytes] = answers[line.bytes] ?? []
            } else {
                let key = try #require(request, "a response before any request: \(line.comment)")
                answers[key, default: []].append(line.bytes)
            }
        }
        self.answers = answers
        (incoming, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
    }

    var unknownRequests: [[UInt8]] { unknown.withLock { $0 } }

    func send(_ pdu: [UInt8]) throws {
        if let replies = answers[pdu] {
            for reply in replies { continuation.yield(reply) }
        } else {
            unknown.withLock { $0.append(pdu) }
            let handle = pdu.count >= 3 ? [pdu[1], pdu[2]] : [0, 0]
            continuation.yield([ATTPDU.Opcode.errorResponse, pdu.first ?? 0] + handle + [ATTErrorCode.requestNotSupported.rawValue])
        }
    }

    func close() { continuation.finish() }
}

/// The hex fixture files beside this source file (Fixtures/*.hex): `#` comment lines, then one
/// captured packet per hex line; each packet keeps the comment lines just above it.
enum CapturedFixture {
    struct Line {
        var comment: String
        var bytes: [UInt8]
    }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func lines(_ name: String) throws -> [Line] {
        let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
        var lines: [Line] = []
        var comment: [Substring] = []
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") {
                comment.append(line.dropFirst().drop { $0 == " " })
            } else if !line.isEmpty {
                let bytes = try #require(Hex.decode(line, ignoring: " \t\n\r:"), "\(name): not hex: \(line)")
                lines.append(Line(comment: comment.joined(separator: " "), bytes: bytes))
                comment = []
            }
        }
        return lines
    }

    /// btmon stores HCI events without the H4 packet type; an HCI socket delivers it first.
    static func hciSocketPacket(_ event: [UInt8]) -> [UInt8] {
        [0x04] + event
    }
}
