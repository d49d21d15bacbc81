import Glibc

/// A failed system call: which call and the `errno` it left. The one place `-1`/`errno` becomes a
/// Swift error.
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    public var call: String
    public var errno: Int32

    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    public var description: String {
        let message = strerror(errno).map { String(cString: $0) } ?? "errno \(errno)"
        return "\(call): \(message) (errno \(errno))"
    }

    /// Runs a call returning -1 on failure, retrying on EINTR.
    @discardableResult
    static func check<T: FixedWidthInteger>(_ call: String, _ body: () -> T) throws(SystemError) -> T {
        while true {
            let result = body()
            if result != -1 { return result }
            let code = Glibc.errno
            if code == EINTR { continue }
            throw SystemError(call: call, errno: code)
        }
    }
}

/// Owns one file descriptor and closes it exactly once.
final class FileDescriptor: @unchecked Sendable {
    // @unchecked: `raw` is immutable; `closed` is only touched under `lock`.
    let raw: Int32
    private var closed = false
    private let lock = PthreadLock()

    init(_ raw: Int32) { self.raw = raw }

    /// Runs `body` with the descriptor if it is still open, holding the lock so that it cannot be
    /// closed (and its number reused) meanwhile.
    func withOpen<T>(_ body: (Int32) throws(SystemError) -> T) throws(SystemError) -> T {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { throw SystemError(call: "use after close", errno: EBADF) }
        return try body(raw)
    }

    func close() {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        _ = Glibc.close(raw)
    }

    deinit { close() }
}

/// A plain pthread mutex: callers hold it across system calls, which `Mutex` closures make awkward
/// with typed throws.
final class PthreadLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }
}

/// Starts `body` on a new detached OS thread, off Swift's cooperative pool: blocking C calls
/// (poll with a timeout, libbluetooth's synchronous HCI requests) run there.
func startDedicatedThread(_ body: @escaping @Sendable () -> Void) {
    final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let status = pthread_create(&thread, nil, { argument in
        guard let argument else { return nil }
        let box = Unmanaged<Box>.fromOpaque(argument).takeRetainedValue()
        box.body()
        return nil
    }, box)
    if status == 0 {
        pthread_detach(thread)
    } else {
        // No thread: run inline rather than lose the work (only under resource exhaustion).
        Unmanaged<Box>.fromOpaque(box).takeRetainedValue().body()
    }
}

/// Runs a blocking `body` on a dedicated thread and awaits its result.
func onDedicatedThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        startDedicatedThread {
            continuation.resume(with: Result { try body() })
        }
    }
}
