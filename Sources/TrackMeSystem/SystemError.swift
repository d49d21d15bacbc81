// The system-call layer every shell shares (BLE sockets, the agent's sockets, LED and button
// files, the test feeds): types and one retry loop, no I/O of its own.

import Synchronization
public import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A failed system call: which call (with what it was for, e.g. `connect(/run/trackme/agent.sock)`)
/// and the `errno` it left. The project's one errno error, built on swift-system's `Errno`;
/// descriptors are swift-system's `FileDescriptor`, owned by `OwnedFileDescriptor`.
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    public var call: String
    public var errno: Errno

    public init(call: String, errno: Errno) {
        self.call = call
        self.errno = errno
    }

    /// `connect: Connection refused (errno 111)`.
    public var description: String { "\(call): \(errno) (errno \(errno.rawValue))" }

    /// Runs a C call that returns -1 and sets `errno` on failure, calling it again while it fails
    /// with `EINTR`: the one interrupt loop for the calls swift-system does not wrap (socket,
    /// connect, accept, poll, send, recv, libbluetooth's). Calls swift-system wraps go through
    /// `system(_:_:)` with its own `retryOnInterrupt:`.
    @discardableResult
    public static func retrying<T: FixedWidthInteger>(_ call: String, _ body: () -> T) throws(SystemError) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = Errno(rawValue: currentErrno())
            if code == .interrupted { continue }
            throw SystemError(call: call, errno: code)
        }
    }

    /// Runs a swift-system call (which throws `Errno`, having retried `EINTR` itself) and names
    /// the call in the error.
    @discardableResult
    public static func system<T>(_ call: String, _ body: () throws -> T) throws(SystemError) -> T {
        do {
            return try body()
        } catch let errno as Errno {
            throw SystemError(call: call, errno: errno)
        } catch {
            // swift-system throws nothing but Errno.
            throw SystemError(call: call, errno: .ioError)
        }
    }

    /// The calling thread's `errno` (for a C call made outside `retrying`, e.g. one whose -1 is
    /// not an error or whose `EAGAIN` is expected).
    public static var current: Errno { Errno(rawValue: currentErrno()) }
}

private func currentErrno() -> Int32 { errno }

/// Owns one `FileDescriptor` and closes it exactly once (by `close()` or on deinit).
///
/// `withOpen` holds the lock across a short call so the descriptor cannot be closed (and its
/// number reused) meanwhile; `descriptor` is a snapshot for a long blocking call on a thread of
/// its own, where holding the lock would stall `close()`.
public final class OwnedFileDescriptor: Sendable {
    private let state: Mutex<FileDescriptor?>

    public init(_ descriptor: FileDescriptor) {
        state = Mutex(descriptor)
    }

    deinit { close() }

    /// The descriptor while open; nil once closed.
    public var descriptor: FileDescriptor? { state.withLock { $0 } }

    public var isClosed: Bool { descriptor == nil }

    /// Runs `body` with the open descriptor, holding the lock; `EBADF` once closed.
    public func withOpen<T: Sendable>(_ call: String, _ body: (FileDescriptor) throws(SystemError) -> T) throws(SystemError) -> T {
        let result: Result<T, SystemError> = state.withLock { descriptor in
            guard let descriptor else { return .failure(SystemError(call: call, errno: .badFileDescriptor)) }
            do throws(SystemError) {
                return .success(try body(descriptor))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Closes the descriptor the first time; later calls do nothing. Not retried on `EINTR`: on
    /// Linux the descriptor is released even then, and a second close could hit a reused number.
    public func close() {
        let old = state.withLock { descriptor -> FileDescriptor? in
            defer { descriptor = nil }
            return descriptor
        }
        try? old?.close()
    }
}

extension FileDescriptor {
    /// Waits up to `timeoutMilliseconds` for `events` (`POLLIN`, `POLLOUT`) and returns the
    /// `revents` the kernel set, 0 on timeout. An interrupted wait starts again (`retrying`).
    public func poll(_ events: Int16, timeoutMilliseconds: Int32, call: String = "poll") throws(SystemError) -> Int16 {
        var entry = pollfd(fd: rawValue, events: events, revents: 0)
        let ready = try SystemError.retrying(call) { systemPoll(&entry, 1, timeoutMilliseconds) }
        return ready > 0 ? entry.revents : 0
    }
}

private func systemPoll(_ entries: UnsafeMutablePointer<pollfd>, _ count: nfds_t, _ timeout: Int32) -> Int32 {
    poll(entries, count, timeout)
}
