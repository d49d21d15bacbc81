import Dispatch

/// Runs blocking socket calls off the cooperative thread pool.
///
/// Swift concurrency's pool has one thread per core (two on a Pi Zero 2 W's budget); a
/// blocking `recv` there would stall every task. Dispatch's global queue grows threads for
/// blocking work, and every socket we block on has a timeout, so no thread waits forever.
package enum BlockingIO {
    package static func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .utility).async {
                do throws(E) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }
}
