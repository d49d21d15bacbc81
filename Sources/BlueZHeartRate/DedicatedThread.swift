import Glibc

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
