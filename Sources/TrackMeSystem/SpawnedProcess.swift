public import Foundation
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A child that runs beside its parent until signalled (gpsd, HAProxy, a server or an agent
/// under test), started with `posix_spawn` and reaped by one thread of its own. `ProcessRunner`
/// is for a child run to its end; this is for one the caller stops.
///
/// Never Foundation's `Process`: its `run()` scans `/proc/self/fd` with a 256-byte read past
/// the end of `readdir`'s buffer and kills the whole parent about once in a few dozen starts
/// (swift-corelibs-foundation #5472), which in a test process of a hundred children is a
/// crashed suite every few runs.
///
/// The child starts clean whatever thread it is spawned from: no signal blocked, every signal
/// at its default action (a Swift concurrency thread blocks some, and the service lifecycle
/// ignores SIGTERM, which would otherwise pass to the child), and no descriptor but its three
/// standard ones (a pipe another thread opened meanwhile must not leak into a daemon, which
/// would hold its write end for good).
public final class SpawnedProcess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// The parent's own.
        case inherited
        /// Appended to this file, created if missing.
        case file(String)
        /// This pipe's write end (for output) or read end (for input); the parent's copy of
        /// that end is closed once the child has it, so the other end sees the child's end.
        case pipe(Pipe)
    }

    /// How the child ended.
    public enum Termination: Hashable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        public var description: String {
            switch self {
            case .exited(let code): "exited \(code)"
            case .signalled(let signal): "killed by signal \(signal)"
            }
        }
    }

    public let pid: pid_t
    private let ending = NSCondition()
    // Written once by the reaping thread, under `ending`.
    nonisolated(unsafe) private var ended: Termination?
    nonisolated(unsafe) private var waiters: [CheckedContinuation<Termination, Never>] = []

    private init(pid: pid_t) {
        self.pid = pid
    }

    /// Starts `executable` (a path; a bare name is looked up in `PATH`) with `arguments`, in
    /// `environment` (nil: the parent's), in `directory` (nil: the parent's), leading a
    /// process group of its own when `ownProcessGroup` (so `signalGroup` reaches its children).
    public static func launch(
        _ executable: String,
        arguments: [String] = [],
        environment: [String: String]? = nil,
        directory: String? = nil,
        standardInput: Stream = .null,
        standardOutput: Stream = .null,
        standardError: Stream = .null,
        ownProcessGroup: Bool = false
    ) throws(SystemError) -> SpawnedProcess {
        let path = try resolve(executable, in: environment)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        try redirect(standardInput, to: 0, reading: true, in: &actions)
        try redirect(standardOutput, to: 1, reading: false, in: &actions)
        try redirect(standardError, to: 2, reading: false, in: &actions)
        guard let closeFrom = Spawn.addCloseFrom, closeFrom(&actions, 3) == 0 else {
            throw SystemError(call: "posix_spawn_file_actions_addclosefrom_np", errno: .notSupported)
        }
        if let directory {
            guard let changeDirectory = Spawn.addChangeDirectory, changeDirectory(&actions, directory) == 0 else {
                throw SystemError(call: "posix_spawn_file_actions_addchdir_np(\(directory))", errno: .notSupported)
            }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var flags = Int32(POSIX_SPAWN_SETSIGMASK) | Int32(POSIX_SPAWN_SETSIGDEF)
        if ownProcessGroup {
            flags |= Int32(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for pointer in envp ?? [] { free(pointer) } }
        var pid: pid_t = 0
        let status =
            if let envp {
                posix_spawn(&pid, path, &actions, &attributes, argv, envp)
            } else {
                posix_spawn(&pid, path, &actions, &attributes, argv, environ)
            }
        // The child has its copies (or never came): the ends the parent handed over go.
        if case .pipe(let pipe) = standardInput { try? pipe.fileHandleForReading.close() }
        if case .pipe(let pipe) = standardOutput { try? pipe.fileHandleForWriting.close() }
        if case .pipe(let pipe) = standardError, !standardOutput.isPipe(pipe) { try? pipe.fileHandleForWriting.close() }
        guard status == 0 else { throw SystemError(call: "posix_spawn(\(path))", errno: Errno(rawValue: status)) }
        let child = SpawnedProcess(pid: pid)
        BlockingThreads.shared.start { child.reap() }
        return child
    }

    /// Whether the child has not been reaped yet.
    public var isRunning: Bool { termination == nil }

    /// How the child ended; nil while it runs.
    public var termination: Termination? {
        ending.lock()
        defer { ending.unlock() }
        return ended
    }

    /// Sends `signal` to the child, unless it has ended.
    public func signal(_ signal: Int32) {
        ending.lock()
        defer { ending.unlock() }
        // Under the lock the reaper cannot free the pid for reuse meanwhile.
        if ended == nil { _ = kill(pid, signal) }
    }

    /// Sends `signal` to the process group the child leads (`ownProcessGroup`), which outlives
    /// the child when its own children do.
    public func signalGroup(_ signal: Int32) {
        _ = kill(-pid, signal)
    }

    /// Blocks the calling thread until the child ends: for a `deinit` or a blocking thread, never
    /// the cooperative pool (use `exit()` there).
    @discardableResult
    public func waitUntilExit() -> Termination {
        ending.lock()
        defer { ending.unlock() }
        while true {
            if let ended { return ended }
            ending.wait()
        }
    }

    /// Waits until the child ends.
    @discardableResult
    public func exit() async -> Termination {
        await withCheckedContinuation { continuation in
            ending.lock()
            if let ended {
                ending.unlock()
                continuation.resume(returning: ended)
            } else {
                waiters.append(continuation)
                ending.unlock()
            }
        }
    }

    /// SIGKILL, and waits until the child is gone.
    @discardableResult
    public func killAndWait() -> Termination {
        signal(SIGKILL)
        return waitUntilExit()
    }

    private func reap() {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR {
                // Not our child any more (someone else reaped it): all we can say is that it ended.
                status = 0xff << 8
                break
            }
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG are macros: exited when the low 7 bits are 0.
        let termination: Termination = (status & 0x7f) == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
        ending.lock()
        ended = termination
        let waiting = waiters
        waiters = []
        ending.broadcast()
        ending.unlock()
        for waiter in waiting { waiter.resume(returning: termination) }
    }

    private static func redirect(
        _ stream: Stream,
        to slot: Int32,
        reading: Bool,
        in actions: inout posix_spawn_file_actions_t
    ) throws(SystemError) {
        let status: Int32
        switch stream {
        case .null:
            status = posix_spawn_file_actions_addopen(&actions, slot, "/dev/null", reading ? O_RDONLY : O_WRONLY, 0)
        case .inherited:
            return
        case .file(let path):
            status = posix_spawn_file_actions_addopen(&actions, slot, path, reading ? O_RDONLY : O_WRONLY | O_CREAT | O_APPEND, 0o644)
        case .pipe(let pipe):
            let end = reading ? pipe.fileHandleForReading : pipe.fileHandleForWriting
            status = posix_spawn_file_actions_adddup2(&actions, end.fileDescriptor, slot)
        }
        guard status == 0 else { throw SystemError(call: "posix_spawn_file_actions (fd \(slot))", errno: Errno(rawValue: status)) }
    }

    private static func resolve(_ executable: String, in environment: [String: String]?) throws(SystemError) -> String {
        if executable.contains("/") { return executable }
        let search = environment?["PATH"] ?? ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let directories: [String] = search.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"]
        for directory in directories {
            let candidate = "\(directory)/\(executable)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        throw SystemError(call: "find \(executable) in PATH", errno: .noSuchFileOrDirectory)
    }
}

extension SpawnedProcess.Stream {
    fileprivate func isPipe(_ pipe: Pipe) -> Bool {
        if case .pipe(let mine) = self { return mine === pipe }
        return false
    }
}

/// glibc's spawn actions that Swift's Glibc module does not export (2.34's closefrom, 2.29's
/// chdir), found at run time.
private enum Spawn {
    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    typealias AddChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
        unsafeBitCast($0, to: AddCloseFrom.self)
    }
    static let addChangeDirectory: AddChangeDirectory? = dlsym(nil, "posix_spawn_file_actions_addchdir_np").map {
        unsafeBitCast($0, to: AddChangeDirectory.self)
    }
}
