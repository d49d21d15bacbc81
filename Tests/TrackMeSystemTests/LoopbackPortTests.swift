import Foundation
import Glibc
import Testing
@testable import TrackMeSystem

/// A port for a child to bind: never one the kernel could hand to an outgoing connection in the
/// meantime, and never one a listener holds.
@Suite struct LoopbackPortTests {
    @Test("the port lies below the ephemeral range and can be bound on 127.0.0.1 when returned")
    func belowEphemeralRange() throws {
        let range = try String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        let ephemeralStart = try #require(range.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) })
        for _ in 0..<20 {
            let port = try LoopbackPort.unused()
            #expect(port >= 1024 && port < ephemeralStart)
            let listener = try #require(Self.listen(on: port), "port \(port) could not be bound")
            close(listener)
        }
    }

    @Test("a port a listener holds is not returned, and none is when every candidate is held")
    func skipsHeldPorts() throws {
        // Three candidates next to a port the kernel gave a listener of ours, two of them held.
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        var candidates: Range<Int>?
        for _ in 0..<20 where candidates == nil {
            let base = try LoopbackPort.unused()
            let fds = [base, base + 1].compactMap { Self.listen(on: $0) }
            held += fds
            if fds.count == 2, let free = Self.listen(on: base + 2) {
                close(free)
                candidates = base..<(base + 3)
            }
        }
        let three = try #require(candidates)
        for _ in 0..<30 {
            #expect(try LoopbackPort.unused(in: three) == three.upperBound - 1)
        }
        let last = try #require(Self.listen(on: three.upperBound - 1))
        held.append(last)
        #expect(throws: SystemError.self) { try LoopbackPort.unused(in: three) }
    }

    private static func listen(on port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard bound, Glibc.listen(fd, 1) == 0 else {
            close(fd)
            return nil
        }
        return fd
    }
}
