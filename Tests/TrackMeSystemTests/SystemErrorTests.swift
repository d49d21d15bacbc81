import Foundation
import Glibc
import Synchronization
import SystemPackage
import Testing
import TrackMeSystem

/// The one system-call layer: EINTR is retried in `SystemError.retrying`, every other errno
/// becomes a `SystemError` that names the call, and an owned descriptor closes once.
@Suite struct SystemErrorTests {
    @Test("a call interrupted twice is made again until it succeeds")
    func retriesInterruptedCalls() throws {
        var calls = 0
        let result = try SystemError.retrying("read") { () -> Int in
            calls += 1
            if calls <= 2 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(result == 7)
        #expect(calls == 3)
    }

    @Test("any other errno is thrown at once, naming the call and the errno")
    func namesTheCallAndErrno() throws {
        var calls = 0
        let error = try #require(throws: SystemError.self) {
            try SystemError.retrying("connect") { () -> Int32 in
                calls += 1
                errno = ECONNREFUSED
                return -1
            }
        }
        #expect(calls == 1)
        #expect(error.errno == .connectionRefused)
        #expect(error.description == "connect: Connection refused (errno 111)")
    }

    @Test("a read interrupted by a signal on a pipe is retried, and the bytes arrive")
    func readInterruptedBySignal() async throws {
        // SIGUSR2 with a handler that does nothing and without SA_RESTART: a blocked read returns
        // EINTR when the signal lands on its thread.
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        action.sa_flags = 0
        sigemptyset(&action.sa_mask)
        var previous = sigaction()
        #expect(sigaction(SIGUSR2, &action, &previous) == 0)
        defer { _ = sigaction(SIGUSR2, &previous, nil) }

        let pipe = try FileDescriptor.pipe(options: .closeOnExec)
        defer {
            try? pipe.readEnd.close()
            try? pipe.writeEnd.close()
        }
        let reader = PipeReader(descriptor: pipe.readEnd.rawValue)
        reader.start()
        // Interrupt the reader while it waits in read (each signal is delivered only once the
        // thread is inside the call: `interrupts` counts the EINTRs the layer saw).
        var attempts = 0
        while reader.interrupts < 2 && attempts < 1_000_000 {
            reader.signal(SIGUSR2)
            attempts += 1
            await Task.yield()
        }
        #expect(reader.interrupts >= 2, "the read was never interrupted: the test proves nothing")
        _ = try pipe.writeEnd.writeAll([1, 2, 3])
        let outcome = await reader.result()
        #expect(try outcome.get() == [1, 2, 3])
    }

    @Test("an owned descriptor closes once; using it after is EBADF naming the call")
    func ownedDescriptorClosesOnce() throws {
        let pipe = try FileDescriptor.pipe(options: .closeOnExec)
        let owner = OwnedFileDescriptor(pipe.readEnd)
        owner.close()
        owner.close()
        #expect(owner.isClosed)
        let error = try #require(throws: SystemError.self) {
            try owner.withOpen("read") { fd throws(SystemError) in fd.rawValue }
        }
        #expect(error.call == "read")
        #expect(error.errno == .badFileDescriptor)
        try pipe.writeEnd.close()
    }
}

/// Reads 3 bytes from a pipe through `SystemError.retrying` on a thread of its own, counting the
/// interrupts the layer swallowed (the count is taken where the read returns EINTR).
private final class PipeReader: Sendable {
    private struct State {
        var thread: pthread_t?
        var interrupts = 0
        var outcome: Result<[UInt8], SystemError>?
        var waiter: CheckedContinuation<Result<[UInt8], SystemError>, Never>?
    }

    private let descriptor: Int32
    private let state = Mutex(State())

    init(descriptor: Int32) { self.descriptor = descriptor }

    var interrupts: Int { state.withLock { $0.interrupts } }

    func start() {
        let thread = Thread { [self] in run() }
        thread.start()
    }

    /// Sends `number` to the reader's thread while it has not finished.
    func signal(_ number: Int32) {
        state.withLock { state in
            guard let thread = state.thread, state.outcome == nil else { return }
            pthread_kill(thread, number)
        }
    }

    func result() async -> Result<[UInt8], SystemError> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<[UInt8], SystemError>? in
                if let outcome = state.outcome { return outcome }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private func run() {
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGUSR2)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
        state.withLock { $0.thread = pthread_self() }
        var buffer = [UInt8](repeating: 0, count: 3)
        let descriptor = self.descriptor
        let result = Result { () throws(SystemError) -> [UInt8] in
            let count = try SystemError.retrying("read") { () -> Int in
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                let code = errno
                if count < 0 && code == EINTR { state.withLock { $0.interrupts += 1 } }
                errno = code
                return count
            }
            return Array(buffer.prefix(count))
        }
        let waiter = state.withLock { state -> CheckedContinuation<Result<[UInt8], SystemError>, Never>? in
            state.outcome = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: result)
    }
}
