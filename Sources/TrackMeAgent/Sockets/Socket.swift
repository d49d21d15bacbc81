import Synchronization

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
/// systemd notifier and the CLI client share: every `-1` becomes a `SocketError` here, `EINTR` is
/// retried here, and no C type leaves this file. All calls block; callers run them on a thread
/// of their own, never on the cooperative pool.
package final class Socket: Sendable {
    private let descriptor: Mutex<Int32>
    /// What the socket is for (its path or address), for error messages.
    package let label: String

    private init(descriptor: Int32, label: String) {
        self.descriptor = Mutex(descriptor)
        self.label = label
    }

    deinit {
        close()
    }

    package var isClosed: Bool { descriptor.withLock { $0 < 0 } }

    package func close() {
        let fd = descriptor.withLock { fd -> Int32 in
            let old = fd
            fd = -1
            return old
        }
        if fd >= 0 { _ = systemClose(fd) }
    }

    private var fd: Int32 { descriptor.withLock { $0 } }

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
                throw SocketError(code: .pathOccupied, call: "lstat", context: path)
            }
            if let live = try? connectUnixStream(path: path) {
                live.close()
                throw SocketError(code: .inUse, call: "connect", context: path)
            }
            _ = unlink(path)
        }
        let socket = try make(domain: AF_UNIX, type: socketStream, label: path)
        try withUnixAddress(path: Array(path.utf8), label: path) { (address, length) throws(SocketError) in
            try check(bind(socket.fd, address, length), call: "bind", context: path)
        }
        try check(chmod(path, mode_t(permissions)), call: "chmod", context: path)
        try check(listen(socket.fd, backlog), call: "listen", context: path)
        return socket
    }

    /// A listening TCP socket on 127.0.0.1 (never another address); port 0 picks a free one.
    package static func listenTCPLoopback(port: UInt16, backlog: Int32 = 16) throws(SocketError) -> Socket {
        let label = "127.0.0.1:\(port)"
        let socket = try make(domain: AF_INET, type: socketStream, label: label)
        var yes: Int32 = 1
        try check(
            setsockopt(socket.fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size)),
            call: "setsockopt",
            context: label
        )
        var address = loopbackAddress(port: port)
        try withUnsafePointer(to: &address) { (pointer) throws(SocketError) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (generic) throws(SocketError) in
                try check(
                    bind(socket.fd, generic, socklen_t(MemoryLayout<sockaddr_in>.size)),
                    call: "bind",
                    context: label
                )
            }
        }
        try check(listen(socket.fd, backlog), call: "listen", context: label)
        return socket
    }

    /// A stream connection to the Unix socket at `path`.
    package static func connectUnixStream(path: String) throws(SocketError) -> Socket {
        let socket = try make(domain: AF_UNIX, type: socketStream, label: path)
        try withUnixAddress(path: Array(path.utf8), label: path) { (address, length) throws(SocketError) in
            try retryingInterrupts(call: "connect", context: path) { connect(socket.fd, address, length) }
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
                try retryingInterrupts(call: "connect", context: label) { connect(socket.fd, generic, length) }
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
            try check(bind(socket.fd, pointer, length), call: "bind", context: label)
        }
        return socket
    }

    private static func make(domain: Int32, type: Int32, label: String) throws(SocketError) -> Socket {
        let fd = socket(domain, type | socketCloseOnExec, 0)
        try check(fd, call: "socket", context: label)
        return Socket(descriptor: fd, label: label)
    }

    // MARK: - Using sockets

    /// The local port of a TCP socket (after binding port 0).
    package func localPort() throws(SocketError) -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = self.fd
        let result = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        try Self.check(result, call: "getsockname", context: label)
        return UInt16(bigEndian: address.sin_port)
    }

    /// Waits up to `timeoutMilliseconds` for the socket to become readable (or for a pending
    /// connection on a listener). Returns false on timeout.
    package func waitReadable(timeoutMilliseconds: Int32) throws(SocketError) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let result = poll(&entry, 1, timeoutMilliseconds)
            if result >= 0 { return result > 0 }
            if errno == EINTR { continue }
            throw SocketError(code: .systemCall, call: "poll", errno: errno, context: label)
        }
    }

    /// Accepts one pending connection; call after `waitReadable` said so.
    package func accept() throws(SocketError) -> Socket {
        while true {
            let client = systemAccept(fd)
            if client >= 0 {
                // accept4 is not visible without _GNU_SOURCE; the agent starts no children
                // between these two calls, so setting close-on-exec after is enough.
                _ = fcntl(client, F_SETFD, FD_CLOEXEC)
                return Socket(descriptor: client, label: label)
            }
            if errno == EINTR { continue }
            throw SocketError(code: .systemCall, call: "accept", errno: errno, context: label)
        }
    }

    /// Bounds how long a blocking read or write may wait, so a silent peer cannot hold a
    /// thread forever.
    package func setTimeouts(milliseconds: Int) throws(SocketError) {
        var value = timeval(tv_sec: milliseconds / 1000, tv_usec: .init((milliseconds % 1000) * 1000))
        let size = socklen_t(MemoryLayout<timeval>.size)
        try Self.check(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, size), call: "setsockopt", context: label)
        try Self.check(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, size), call: "setsockopt", context: label)
    }

    /// Reads what is available (blocking until something is), up to `maximum` bytes; an empty
    /// result means the peer closed its end.
    package func read(maximum: Int) throws(SocketError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maximum)
        let fd = self.fd
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, maximum, 0) }
            if count >= 0 { return Array(buffer.prefix(count)) }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                throw SocketError(code: .timedOut, call: "recv", errno: errno, context: label)
            }
            throw SocketError(code: .systemCall, call: "recv", errno: errno, context: label)
        }
    }

    /// Writes all of `bytes`, however many calls that takes.
    package func writeAll(_ bytes: [UInt8]) throws(SocketError) {
        let fd = self.fd
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { raw in
                systemSend(fd, raw.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if count >= 0 {
                offset += count
                continue
            }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                throw SocketError(code: .timedOut, call: "send", errno: errno, context: label)
            }
            throw SocketError(code: .systemCall, call: "send", errno: errno, context: label)
        }
    }

    /// Closes our sending side so the peer reads end-of-file after our last byte.
    package func shutdownWrite() {
        _ = shutdown(fd, Int32(SHUT_WR))
    }

    /// Sends one datagram to the Unix socket `address` (a path, or `\0`-prefixed abstract name).
    package func send(datagram: [UInt8], toUnixAddress address: [UInt8]) throws(SocketError) {
        let fd = self.fd
        let label = self.label
        try Self.withUnixAddress(path: address, label: label) { (pointer, length) throws(SocketError) in
            try Self.retryingInterrupts(call: "sendto", context: label) {
                let sent = datagram.withUnsafeBytes {
                    sendto(fd, $0.baseAddress, datagram.count, Int32(MSG_NOSIGNAL), pointer, length)
                }
                return Int32(clamping: sent)
            }
        }
    }

    // MARK: - errno in one place

    private static func check(_ result: Int32, call: String, context: String) throws(SocketError) {
        guard result < 0 else { return }
        throw SocketError(code: .systemCall, call: call, errno: errno, context: context)
    }

    private static func retryingInterrupts(call: String, context: String, _ body: () -> Int32) throws(SocketError) {
        while true {
            if body() >= 0 { return }
            if errno == EINTR { continue }
            throw SocketError(code: .systemCall, call: call, errno: errno, context: context)
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
            throw SocketError(code: .pathTooLong, call: "bind", context: label)
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

private func systemClose(_ fd: Int32) -> Int32 {
    #if canImport(Darwin)
    Darwin.close(fd)
    #elseif canImport(Musl)
    Musl.close(fd)
    #else
    Glibc.close(fd)
    #endif
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
