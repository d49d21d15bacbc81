#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Talks to systemd's notification socket (`Type=notify` services), written by hand so the
/// agent needs no libsystemd: one `AF_UNIX` datagram per message, `KEY=value` lines.
///
/// `NOTIFY_SOCKET` is a filesystem path (`/run/systemd/notify`) or, when it starts with `@`, a
/// Linux abstract-namespace name (the `@` stands for the leading NUL byte).
public struct SystemdNotifier: Sendable {
    /// The socket address as the kernel wants it (abstract names start with a NUL byte).
    let address: [UInt8]
    /// `NOTIFY_SOCKET` as given, for messages.
    public let socketName: String

    /// nil when the agent does not run under systemd with `Type=notify` (no `NOTIFY_SOCKET`).
    public init?(environment: [String: String]) throws(SocketError) {
        guard let name = environment["NOTIFY_SOCKET"], !name.isEmpty else { return nil }
        try self.init(socketName: name)
    }

    public init(socketName name: String) throws(SocketError) {
        if name.hasPrefix("@") {
            address = [0] + Array(name.utf8.dropFirst())
        } else if name.hasPrefix("/") {
            address = Array(name.utf8)
        } else {
            // systemd 254+ may also pass vsock: addresses (for VMs); not on a Pi.
            throw SocketError(code: .unsupportedAddress, context: name)
        }
        socketName = name
    }

    /// Sends one notification, e.g. `["READY=1", "STATUS=running"]`.
    public func send(_ assignments: [String]) throws(SocketError) {
        let message = Array(assignments.joined(separator: "\n").utf8)
        let socket = try Socket.unixDatagram(label: socketName)
        defer { socket.close() }
        try socket.send(datagram: message, toUnixAddress: address)
    }

    /// The watchdog interval systemd expects pings within (`WatchdogSec=`), or nil when the
    /// watchdog is off or meant for another process (`WATCHDOG_PID` names someone else).
    public static func watchdogInterval(environment: [String: String], processID: Int32? = nil) -> Duration? {
        let processID = processID ?? getpid()
        guard let text = environment["WATCHDOG_USEC"], let microseconds = UInt64(text), microseconds > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], Int32(pid) != processID { return nil }
        return .microseconds(Int64(clamping: microseconds))
    }
}
