import Foundation

/// Runs one blocking socket call on a thread of its own, off the cooperative pool.
///
/// Swift concurrency's pool has one thread per core (two on this machine, four on a Pi); a
/// blocking `recv` there would stall every task. Dispatch's global queues are no better: on
/// Linux they are capped near the core count too, so a few idle clients would starve the
/// server (seen in the tests). A thread per call costs tens of microseconds, which a local
/// control socket and a metrics scrape can afford; every socket we block on has a timeout, so
/// no thread lives long.
package enum BlockingIO {
    package static func run<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            let thread = Thread {
                do throws(E) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            thread.name = "trackme-io"
            thread.start()
        }
        return try result.get()
    }
}
