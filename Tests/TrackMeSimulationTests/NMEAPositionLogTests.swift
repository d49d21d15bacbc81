import Foundation
import Testing
import TrackMeCore
import TrackMeSimulation

@Suite struct NMEAPositionLogTests {
    static let gpsdTraces = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("simulations/traces/gpsd")

    /// The positions gpsd itself produced for a log (its `.chk` file): TPVs with mode >= 2.
    /// Read field by field: some `.chk` lines hold values JSONSerialization rejects.
    static func chkFixes(_ name: String) throws -> [(lat: Double, lon: Double)] {
        let text = try String(contentsOf: gpsdTraces.appendingPathComponent(name + ".chk"), encoding: .utf8)
        func number(_ key: String, in line: Substring) -> Double? {
            guard let range = line.range(of: "\"\(key)\":") else { return nil }
            return Double(line[range.upperBound...].prefix { "-+.0123456789eE".contains($0) })
        }
        return text.split(whereSeparator: \.isNewline).filter { $0.hasPrefix("{\"class\":\"TPV\"") }.compactMap { line in
            guard let mode = number("mode", in: line), mode >= 2, let lat = number("lat", in: line), let lon = number("lon", in: line)
            else { return nil }
            return (lat, lon)
        }
    }

    /// Fast mode must place the wearer where gpsd would: the same positions as gpsd's own output.
    @Test(arguments: ["mt3339.log", "bu353s4.log", "haicom-305N.log", "neo-m8n.log"])
    func fastModeMatchesGpsdPositions(log: String) throws {
        let text = try String(contentsOf: Self.gpsdTraces.appendingPathComponent(log), encoding: .isoLatin1)
        let fixes = NMEAPositionLog(text: text).fixes.filter { $0.fix.hasPosition }
        let expected = try Self.chkFixes(log)
        #expect(!expected.isEmpty)
        // Every gpsd position appears among ours, within 1e-6 degrees (NMEA minutes carry 4-5 decimals).
        for e in expected {
            #expect(
                fixes.contains { abs(($0.fix.latitude ?? 0) - e.lat) < 1e-6 && abs(($0.fix.longitude ?? 0) - e.lon) < 1e-6 },
                "\(log) \(e.lat) \(e.lon)"
            )
        }
    }

    @Test func offsetsFollowTheReceiverClock() throws {
        let text = try String(contentsOf: Self.gpsdTraces.appendingPathComponent("mt3339.log"), encoding: .isoLatin1)
        let offsets = NMEAPositionLog(text: text).fixes.map(\.offsetMilliseconds)
        #expect(offsets.first == 0)
        #expect(zip(offsets, offsets.dropFirst()).allSatisfy { $1 - $0 == 1000 })
    }

    @Test func garbageAndBadChecksumsGiveNoFix() {
        let text = "\u{0}\u{0}$GPRMC,095255.810,A,2712.6404,S,15303.1201,E,0.00,0.00,080407,,,A*00\nhello\n$GPGGA,1,2*ZZ\n"
        #expect(NMEAPositionLog(text: text).fixes.isEmpty)
    }
}
