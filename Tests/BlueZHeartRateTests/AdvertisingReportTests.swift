import BlueZHeartRate
import Testing

@Suite struct AdvertisingReportTests {
    /// An LE Advertising Report event as a Polar H10 sends it (layout per Core 5.3 Vol 4 Part E
    /// 7.7.65.2; flags, incomplete 16-bit UUID list with 0x180D and 0xFEEE, short name).
    static let polarAdvert: [UInt8] = [
        0x04, 0x3E, 0x21, 0x02, 0x01,
        0x00, 0x01, 0x0D, 0x5C, 0x3A, 0x1B, 0xA0, 0xE8,  // ADV_IND, random, E8:A0:1B:3A:5C:0D
        0x15,
        0x02, 0x01, 0x06,
        0x05, 0x02, 0x0D, 0x18, 0xEE, 0xFE,
        0x0B, 0x08, 0x50, 0x6F, 0x6C, 0x61, 0x72, 0x20, 0x48, 0x31, 0x30, 0x20,  // "Polar H10 "
        0xC5,  // -59 dBm
    ]

    @Test func parsesARealShapedAdvertisingReport() throws {
        let reports = try AdvertisingReport.reports(fromHCIPacket: Self.polarAdvert)
        let report = try #require(reports.first)
        #expect(reports.count == 1)
        #expect(report.address.description == "E8:A0:1B:3A:5C:0D")
        #expect(report.addressType == .random)
        #expect(report.rssi == -59)
        #expect(report.data.flags == 0x06)
        #expect(report.data.serviceUUIDs == [0x180D, 0xFEEE])
        #expect(report.data.serviceListComplete == false)
        #expect(report.data.localName == "Polar H10 ")
        #expect(report.data.localNameComplete == false)
    }

    @Test func adStructuresRoundTrip() throws {
        var data = AdvertisingData()
        data.flags = 0x06
        data.serviceUUIDs = [0x180D, 0x180F]
        data.serviceListComplete = true
        data.localName = "TICKR 1A2B"
        data.localNameComplete = true
        data.txPower = -4
        #expect(try AdvertisingData(bytes: data.encoded) == data)
        let report = AdvertisingReport(
            eventType: 4,
            address: try #require(BluetoothAddress("00:AA:01:00:00:00")),
            addressType: .public,
            data: data,
            rssi: -70
        )
        #expect(try AdvertisingReport.reports(fromHCIPacket: report.hciPacket) == [report])
    }

    @Test func zeroLengthEndsTheDataAndOddUUIDListsThrow() throws {
        #expect(try AdvertisingData(bytes: [0x02, 0x01, 0x06, 0x00, 0xFF, 0xFF]).flags == 0x06)
        let error = try #require(throws: PayloadDecodingError.self) { try AdvertisingData(bytes: [0x04, 0x03, 0x0D, 0x18, 0x0F]) }
        #expect(error.code == .invalidValue)
        #expect(throws: PayloadDecodingError.self) { try AdvertisingData(bytes: [0x05, 0x09, 0x41]) }
    }

    @Test func truncatedEventsThrowAndOtherEventsAreIgnored() throws {
        for length in 1..<Self.polarAdvert.count {
            #expect(throws: PayloadDecodingError.self, "prefix \(length)") {
                try AdvertisingReport.reports(fromHCIPacket: Array(Self.polarAdvert.prefix(length)))
            }
        }
        // Command Complete, and an ACL packet: not reports.
        #expect(try AdvertisingReport.reports(fromHCIPacket: [0x04, 0x0E, 0x04, 0x01, 0x0B, 0x20, 0x00]) == [])
        #expect(try AdvertisingReport.reports(fromHCIPacket: [0x02, 0x01, 0x20]) == [])
    }

    @Test func scanResultsMergeScanResponsesAndKeepOnlyStraps() throws {
        let strap = try #require(BluetoothAddress("E8:A0:1B:3A:5C:0D"))
        let other = try #require(BluetoothAddress("11:22:33:44:55:66"))
        var advert = AdvertisingData()
        advert.serviceUUIDs = [0x180D]
        var response = AdvertisingData()
        response.localName = "Polar H10 3A5C0D"
        response.localNameComplete = true
        var speaker = AdvertisingData()
        speaker.serviceUUIDs = [0x110B]
        var results = StrapScanResults()
        results.add(AdvertisingReport(eventType: 0, address: strap, addressType: .random, data: advert, rssi: -80))
        results.add(AdvertisingReport(eventType: 0, address: other, addressType: .public, data: speaker, rssi: -30))
        results.add(AdvertisingReport(eventType: 4, address: strap, addressType: .random, data: response, rssi: -62))
        #expect(results.straps == [DiscoveredStrap(address: strap, addressType: .random, name: "Polar H10 3A5C0D", rssi: -62, services: [0x180D])])
        #expect(results.strongest?.address == strap)
    }

    @Test func aStrapWithoutAMeasuredSignalIsNeitherStrongestNorPrintedAs127() throws {
        let near = try #require(BluetoothAddress("E8:A0:1B:3A:5C:0D"))
        let unknown = try #require(BluetoothAddress("E8:A0:1B:3A:5C:0E"))
        var advert = AdvertisingData()
        advert.serviceUUIDs = [0x180D]
        var results = StrapScanResults()
        results.add(AdvertisingReport(eventType: 0, address: unknown, addressType: .random, data: advert, rssi: 127))
        results.add(AdvertisingReport(eventType: 0, address: near, addressType: .random, data: advert, rssi: -80))
        #expect(results.strongest?.address == near)
        let line = JSONLines.strap(try #require(results.straps.first { $0.address == unknown }))
        #expect(line.contains("\"rssi\":null"))
        // A later report with a measured signal replaces "unavailable".
        results.add(AdvertisingReport(eventType: 0, address: unknown, addressType: .random, data: advert, rssi: -40))
        #expect(results.strongest?.address == unknown)
        #expect(JSONLines.strap(try #require(results.strongest)).contains("\"rssi\":-40"))
    }

    @Test func addressesParseAndPrint() throws {
        let address = try #require(BluetoothAddress("00:aa:01:01:00:01"))
        #expect(address.description == "00:AA:01:01:00:01")
        #expect(BluetoothAddress("00:AA:01:01:00") == nil)
        #expect(BluetoothAddress("00:AA:01:01:00:GG") == nil)
    }
}
