#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed socket call: which call, the errno it set, and what the socket was for.
public struct SocketError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// A system call returned -1; `errno` says why.
        case systemCall = "system_call"
        /// A Unix socket path does not fit in `sockaddr_un.sun_path` (107 bytes on Linux).
        case pathTooLong = "path_too_long"
        /// Something other than a socket is in the way of a socket path; we never delete it.
        case pathOccupied = "path_occupied"
        /// A live socket is at the path: another agent is running.
        case inUse = "in_use"
        /// The peer sent more than we accept in one line or request head.
        case messageTooLong = "message_too_long"
        /// The peer closed the connection before a complete message arrived.
        case connectionClosed = "connection_closed"
        /// A read did not complete within the connection's timeout.
        case timedOut = "timed_out"
        /// An address we cannot use (e.g. a `NOTIFY_SOCKET` of an unsupported family).
        case unsupportedAddress = "unsupported_address"
    }

    public var code: Code
    /// The system call, e.g. `bind`.
    public var call: String
    public var errno: Int32
    /// The socket path or address concerned.
    public var context: String

    public init(code: Code, call: String, errno: Int32 = 0, context: String) {
        self.code = code
        self.call = call
        self.errno = errno
        self.context = context
    }

    public var description: String {
        switch code {
        case .systemCall:
            let text = String(cString: strerror(errno))
            return "\(call)(\(context)): \(text) (errno \(errno))"
        case .pathTooLong: return "\(context): socket path too long"
        case .pathOccupied: return "\(context): exists and is not a socket; not removing it"
        case .inUse: return "\(context): another process is listening there (is the agent already running?)"
        case .messageTooLong: return "\(context): message too long"
        case .connectionClosed: return "\(context): connection closed before a complete message"
        case .timedOut: return "\(context): timed out"
        case .unsupportedAddress: return "\(context): unsupported socket address"
        }
    }
}
