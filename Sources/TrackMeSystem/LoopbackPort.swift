import Foundation
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A TCP port on 127.0.0.1 for a child process (gpsd, PostgreSQL, HAProxy) that must be told
/// its port before it binds it.
///
/// The port is drawn at random *below* the kernel's ephemeral range: a port the kernel hands
/// out for `bind(0)` comes from that range, and so does the source port of every outgoing
/// connection on the machine, so a port learned that way and closed can be taken by any connect
/// before the child binds it (a test run beside other work saw PostgreSQL fail to start with
/// "Address already in use" that way). Below the range only another listener can take it, and
/// each candidate is checked to bind now. A child can still lose the port to another listener
/// between the check and its bind: callers that start a child retry on "Address already in use".
public enum LoopbackPort {
    /// A port no listener holds on 127.0.0.1 now, outside the ephemeral range.
    public static func unused() throws(SystemError) -> Int {
        try unused(in: candidateRange())
    }

    /// A port of `candidates` that binds now, drawn at random.
    static func unused(in candidates: Range<Int>) throws(SystemError) -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: candidates)
            if try bindable(port) { return port }
        }
        throw SystemError(call: "bind (200 ports of \(candidates) tried)", errno: .addressInUse)
    }

    /// The 12,000 ports just below the ephemeral range (`ip_local_port_range`, 32768 by default).
    static func candidateRange() -> Range<Int> {
        let ephemeralStart = firstEphemeralPort() ?? 32768
        return max(1024, ephemeralStart - 12_000)..<max(1025, ephemeralStart)
    }

    private static func firstEphemeralPort() -> Int? {
        (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))?
            .split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) }
    }

    /// Whether a listener could bind `port` on 127.0.0.1 now (without SO_REUSEADDR, as a strict
    /// child would).
    private static func bindable(_ port: Int) throws(SystemError) -> Bool {
        let fd = try SystemError.retrying("socket") { socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        return withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 }
        }
    }
}
