public import SystemPackage
public import TrackMeSystem

/// A failed socket operation: what went wrong and what the socket was for. A failed system call
/// (`.systemCall`, `.timedOut`) carries the project's one errno error, `SystemError`, whose call
/// names the socket: `connect(/run/trackme/agent.sock): No such file or directory (errno 2)`.
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
    /// The socket path or address concerned.
    public var context: String
    /// The failed system call, for `.systemCall` and `.timedOut`.
    public var systemError: SystemError?

    /// The errno of the failed system call, if one failed.
    public var errno: Errno? { systemError?.errno }

    public init(code: Code, context: String, systemError: SystemError? = nil) {
        self.code = code
        self.context = context
        self.systemError = systemError
    }

    /// `call` on the socket for `context` failed with `errno`.
    public init(code: Code = .systemCall, call: String, errno: Errno, context: String) {
        self.init(code: code, context: context, systemError: SystemError(call: "\(call)(\(context))", errno: errno))
    }

    public var description: String {
        switch code {
        case .systemCall:
            return systemError?.description ?? "\(context): system call failed"
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
