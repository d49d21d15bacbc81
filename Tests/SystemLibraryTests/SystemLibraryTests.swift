import CBlueZ
import CGPS
import Glibc
import Testing

/// The C libraries link and their basic calls behave; the Swift wrappers over them live in
/// BlueZHeartRate and GPSDPosition.
@Suite struct SystemLibraryTests {
    @Test func bluetoothAddressRoundTripsThroughLibbluetooth() {
        var address = bdaddr_t()
        #expect(str2ba("00:AA:01:01:00:01", &address) == 0)
        // bdaddr_t is little-endian: the last octet of the text comes first.
        #expect(address.b.0 == 0x01 && address.b.5 == 0x00 && address.b.4 == 0xAA)
        var text = [CChar](repeating: 0, count: 18)
        #expect(ba2str(&address, &text) == 17)
        #expect(String(decoding: text.prefix(17).map { UInt8(bitPattern: $0) }, as: UTF8.self) == "00:AA:01:01:00:01")
    }

    @Test func libgpsExplainsItsErrors() throws {
        let message = try #require(gps_errstr(-6))
        #expect(String(cString: message).contains("connect"))
    }

    @Test func openingGpsdOnAClosedPortFails() throws {
        // Find a loopback port nobody listens on: bind one, then close it.
        let port = try closedLoopbackPort()
        let data = UnsafeMutablePointer<gps_data_t>.allocate(capacity: 1)
        defer { data.deallocate() }
        let status = gps_open("127.0.0.1", "\(port)", data)
        #expect(status == -1)
        #expect(errno != 0)
    }

    private func closedLoopbackPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        try #require(bound)
        return UInt16(bigEndian: addr.sin_port)
    }
}
