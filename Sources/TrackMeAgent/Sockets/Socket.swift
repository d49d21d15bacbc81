import SystemPackage
import TrackMeSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(Glibc)
private let socketStream = Int32(SOCK_STREAM.rawValue)
private let socketDatagram = Int32(SOCK_DGRAM.rawValue)
private let socketCloseOnExec = Int32(SOCK_CLOEXEC.rawValue)
#else
private let socketStream = SOCK_STREAM
private let socketDatagram = SOCK_DGRAM
private let socketCloseOnExec = SOCK_CLOEXEC
#endif

/// One socket file descriptor, closed exactly once (by `close()` or on deinit).
///
/// The thin wrapper over the POSIX socket calls the status server, the metrics endpoint, the
/// systemd notifier and the CLI client share: every `-1` becomes a `SocketError` here (through
/// TrackMeSystem's `SystemError.retrying`, which retries `EINTR`), and no C type leaves this file.
/// All calls block; callers run them on a thread of their own, never on the cooperative pool.
package final class Socket: Sendable {
    private let owner: OwnedFileDescriptor
    /// What the socket is for (its path or address), for error messages.
    package let label: String

    private init(descriptor: FileDescriptor, label: String) {
        self.owner = OwnedFileDescriptor(descriptor)
        self.label = label
    }

    package var isClosed: Bool { owner.isClosed }

    package func close() {
        owner.close()
    }

    /// The descriptor for one C call (-1 once closed, so the call fails with `EBADF`). A
    /// snapshot, not held under a lock: blocking calls must not stall `close()`.
    private var descriptor: FileDescriptor { owner.descriptor ?? FileDescriptor(rawValue: -1) }

    // MARK: - Making sockets

    /// A listening Unix stream socket at `path`. A stale socket left by an earlier run is
    /// removed first; a live one (another agent answers there) and anything that is not a
    /// socket are errors, never deleted.
    package static func listenUnixStream(
        path: String,
        backlog: Int32 = 16,
        permissions: UInt32 = 0o660
    ) throws(SocketError)
        -> Socket
    {
        var info = stat()
        if lstat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFSOCK else {
                throw SocketError(code: .pathOccupied, context: path)
            }
            if let live = try? connectUnixStream(path: path) {
                live.close()
                throw SocketError(code: .inUse, context: path)
            }
            _ = unlink(path)
        }
        let socket = try make(domain: AF_UNIX, type: socketStream, label: path)
        try withUnixAddress(path: Array(path.utf8), label: path) { (address, length) throws(SocketError) in
            _ = try call("bind", context: path) { bind(socket.descriptor.rawValue, address, length) }
        }
        try call("chmod", context: path) { chmod(path, mode_t(permissions)) }
        try call("listen", context: path) { listen(socket.descriptor.rawValue, backlog) }
        return socket
    }

    /// A listening TCP socket on 127.0.0.1 (never another address); port 0 picks a free one.
    package static func listenTCPLoopback(port: UInt16, backlog: Int32 = 16) throws(SocketError) -> Socket {
        let label = "127.0.0.1:\(port)"
        let socket = try make(domain: AF_INET, type: socketStream, label: label)
        var yes: Int32 = 1
        try call("setsockopt", context: label) {
            setsockopt(socket.descriptor.rawValue, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = loopbackAddress(port: port)
        try withUnsafePointer(to: &address) { (pointer) throws(SocketError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (generic) throws(SocketError) in
                _ = try call("bind", context: label) { bind(socket.descriptor.rawValue, generic, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        try call("listen", context: label) { listen(socket.descriptor.rawValue, backlog) }
        return socket
    }

    /// A stream connection to the Unix socket at `path`.
    package static func connectUnixStream(path: String) throws(SocketError) -> Socket {
        let socket = try make(domain: AF_UNIX, type: socketStream, label: path)
        try withUnixAddress(path: Array(path.utf8), label: path) { (address, length) throws(SocketError) in
            _ = try call("connect", context: path) { connect(socket.descriptor.rawValue, address, length) }
        }
        return socket
    }

    /// A TCP connection to 127.0.0.1:`port`.
    package static func connectTCPLoopback(port: UInt16) throws(SocketError) -> Socket {
        let label = "127.0.0.1:\(port)"
        let socket = try make(domain: AF_INET, type: socketStream, label: label)
        var address = loopbackAddress(port: port)
        try withUnsafePointer(to: &address) { (pointer) throws(SocketError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (generic) throws(SocketError) in
                let length = socklen_t(MemoryLayout<sockaddr_in>.size)
                _ = try call("connect", context: label) { connect(socket.descriptor.rawValue, generic, length) }
            }
        }
        return socket
    }

    /// An unbound Unix datagram socket, for `send(datagram:toUnixAddress:)`.
    package static func unixDatagram(label: String) throws(SocketError) -> Socket {
        try make(domain: AF_UNIX, type: socketDatagram, label: label)
    }

    /// A Unix datagram socket bound to `path`, to receive datagrams (tests stand in for systemd).
    package static func bindUnixDatagram(address: [UInt8], label: String) throws(SocketError) -> Socket {
        let socket = try make(domain: AF_UNIX, type: socketDatagram, label: label)
        try withUnixAddress(path: address, label: label) { (pointer, length) throws(SocketError) in
            _ = try call("bind", context: label) { bind(socket.descriptor.rawValue, pointer, length) }
        }
        return socket
    }

    private static func make(domain: Int32, type: Int32, label: String) throws(SocketError) -> Socket {
        let fd = try call("socket", context: label) { socket(domain, type | socketCloseOnExec, 0) }
        return Socket(descriptor: FileDescriptor(rawValue: fd), label: label)
    }

    // MARK: - Using sockets

    /// The local port of a TCP socket (after binding port 0).
    package func localPort() throws(SocketError) -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = descriptor.rawValue
        try Self.call("getsockname", context: label) {
            withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Waits up to `timeoutMilliseconds` for the socket to become readable (or for a pending
    /// connection on a listener). Returns false on timeout.
    package func waitReadable(timeoutMilliseconds: Int32) throws(SocketError) -> Bool {
        do throws(SystemError) {
            return try descriptor.poll(Int16(POLLIN), timeoutMilliseconds: timeoutMilliseconds) != 0
        } catch {
            throw SocketError(call: "poll", errno: error.errno, context: label)
        }
    }

    /// Accepts one pending connection; call after `waitReadable` said so.
    package func accept() throws(SocketError) -> Socket {
        let fd = descriptor.rawValue
        let client = try Self.call("accept", context: label) { systemAccept(fd) }
        // accept4 is not visible without _GNU_SOURCE; the agent starts no children
        // between these two calls, so setting close-on-exec after is enough.
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        return Socket(descriptor: FileDescriptor(rawValue: client), label: label)
    }

    /// Bounds how long a blocking read or write may wait, so a silent peer cannot hold a
    /// thread forever.
    package func setTimeouts(milliseconds: Int) throws(SocketError) {
        var value = timeval(tv_sec: milliseconds / 1000, tv_usec: .init((milliseconds % 1000) * 1000))
        let size = socklen_t(MemoryLayout<timeval>.size)
        let fd = descriptor.rawValue
        try Self.call("setsockopt", context: label) { setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, size) }
        try Self.call("setsockopt", context: label) { setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, size) }
    }

    /// Reads what is available (blocking until something is), up to `maximum` bytes; an empty
    /// result means the peer closed its end.
    package func read(maximum: Int) throws(SocketError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maximum)
        let fd = descriptor.rawValue
        let count = try Self.call("recv", context: label) { buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, maximum, 0) } }
        return Array(buffer.prefix(count))
    }

    /// Writes all of `bytes`, however many calls that takes.
    package func writeAll(_ bytes: [UInt8]) throws(SocketError) {
        let fd = descriptor.rawValue
        var offset = 0
        while offset < bytes.count {
            offset += try Self.call("send", context: label) {
                bytes.withUnsafeBytes { raw in
                    systemSend(fd, raw.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL))
                }
            }
        }
    }

    /// Closes our sending side so the peer reads end-of-file after our last byte.
    package func shutdownWrite() {
        _ = shutdown(descriptor.rawValue, Int32(SHUT_WR))
    }

    /// Sends one datagram to the Unix socket `address` (a path, or `\0`-prefixed abstract name).
    package func send(datagram: [UInt8], toUnixAddress address: [UInt8]) throws(SocketError) {
        let fd = descriptor.rawValue
        let label = self.label
        try Self.withUnixAddress(path: address, label: label) { (pointer, length) throws(SocketError) in
            _ = try Self.call("sendto", context: label) {
                datagram.withUnsafeBytes { sendto(fd, $0.baseAddress, datagram.count, Int32(MSG_NOSIGNAL), pointer, length) }
            }
        }
    }

    // MARK: - errno in one place

    /// One C call through `SystemError.retrying` (EINTR retried there); its failure as a
    /// `SocketError` naming the socket. `EAGAIN` is a receive or send timeout running out.
    @discardableResult
    private static func call<T: FixedWidthInteger>(_ call: String, context: String, _ body: () -> T) throws(SocketError) -> T {
        do throws(SystemError) {
            return try SystemError.retrying(call, body)
        } catch {
            let timedOut = error.errno == .resourceTemporarilyUnavailable || error.errno == .wouldBlock
            throw SocketError(code: timedOut ? .timedOut : .systemCall, call: call, errno: error.errno, context: context)
        }
    }

    private static func loopbackAddress(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        return address
    }

    /// Builds a `sockaddr_un` for `path`. A leading NUL byte makes it a Linux abstract address,
    /// whose length covers exactly the name (no terminating NUL).
    private static func withUnixAddress(
        path: [UInt8],
        label: String,
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(SocketError) -> Void
    ) throws(SocketError) {
        var address = sockaddr_un()
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let isAbstract = path.first == 0
        guard !path.isEmpty, path.count <= (isAbstract ? capacity : capacity - 1) else {
            throw SocketError(code: .pathTooLong, context: label)
        }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.enumerated() { raw[index] = byte }
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path) ?? 2
        let length = socklen_t(pathOffset + path.count + (isAbstract ? 0 : 1))
        var failure: SocketError?
        withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                do throws(SocketError) {
                    try body(generic, length)
                } catch {
                    failure = error
                }
            }
        }
        if let failure { throw failure }
    }
}

private func systemAccept(_ fd: Int32) -> Int32 {
    #if canImport(Darwin)
    Darwin.accept(fd, nil, nil)
    #elseif canImport(Musl)
    Musl.accept(fd, nil, nil)
    #else
    Glibc.accept(fd, nil, nil)
    #endif
}

private func systemSend(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    #if canImport(Darwin)
    Darwin.send(fd, buffer, count, flags)
    #elseif canImport(Musl)
    Musl.send(fd, buffer, count, flags)
    #else
    Glibc.send(fd, buffer, count, flags)
    #endif
}
