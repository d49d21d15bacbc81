import Foundation
public import Logging
public import ServiceLifecycle
import SystemPackage
import TrackMeSystem

#if canImport(Glibc)
import Glibc
#endif

/// The agent's own resident memory after start-up (`hardware/install.md`).
///
/// Most of what `VmRSS` counts for the agent is not its heap (about 5 MB) but clean pages of its
/// own executable: the loader reads all 2.5 MB of relocations once, argument parsing, YAML and
/// assembly run once, and the kernel's fault-around maps 64 KB around every page the code
/// touches, so about four fifths of the 24 MB of machine code ends up mapped. Once start-up is
/// over this unmaps the executable's read-only pages (never a mapping holding a private,
/// written page: the relocated RELRO data stays), asks the kernel to drop them from the page
/// cache where nobody else maps them, and marks the mappings random-access, so that what comes
/// back is what the steady state really executes, a page at a time, without read-ahead.
public enum ExecutablePages {
    struct Mapping: Hashable, Sendable {
        var start: UInt
        var end: UInt
        var permissions: String
        /// Kilobytes of private, written (anonymous) pages in the mapping (smaps `Anonymous:`).
        var anonymousKilobytes: Int
        var residentKilobytes: Int
    }

    /// The mappings of `path` in an smaps text that can be given back safely: read-only
    /// (`r--p`, `r-xp`) and holding no written page.
    static func releasable(smaps: String, path: String) -> [Mapping] {
        var result: [Mapping] = []
        var current: Mapping?
        func flush() {
            if let mapping = current, !mapping.permissions.contains("w"), mapping.permissions.hasPrefix("r"), mapping.anonymousKilobytes == 0 {
                result.append(mapping)
            }
            current = nil
        }
        for line in smaps.split(separator: "\n", omittingEmptySubsequences: true) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let range = fields.first, range.contains("-"), fields.count >= 5, !range.hasSuffix(":") {
                flush()
                let bounds = range.split(separator: "-")
                guard fields.count >= 6, String(fields[5...].joined(separator: " ")) == path, bounds.count == 2,
                    let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16)
                else { continue }
                current = Mapping(start: start, end: end, permissions: String(fields[1]), anonymousKilobytes: 0, residentKilobytes: 0)
            } else if current != nil, fields.count >= 2, let value = Int(fields[1]) {
                if fields[0] == "Anonymous:" { current?.anonymousKilobytes = value }
                if fields[0] == "Rss:" { current?.residentKilobytes = value }
            }
        }
        flush()
        return result
    }

    /// What `release()` did.
    public struct Outcome: Hashable, Sendable {
        /// Resident kilobytes of the released mappings before.
        public var residentKilobytesBefore: Int
        public var mappings: Int
        /// An error from the kernel, if any step failed (nothing is released then, or only part).
        public var error: String?
    }

    /// Gives back this process's executable's read-only pages (see the type's comment).
    public static func release() -> Outcome {
        guard let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"),
            let smaps = try? String(contentsOfFile: "/proc/self/smaps", encoding: .utf8)
        else { return Outcome(residentKilobytesBefore: 0, mappings: 0, error: "cannot read /proc/self/exe or /proc/self/smaps") }
        let mappings = releasable(smaps: smaps, path: executable)
        var outcome = Outcome(residentKilobytesBefore: mappings.reduce(0) { $0 + $1.residentKilobytes }, mappings: mappings.count)
        for mapping in mappings {
            let address = UnsafeMutableRawPointer(bitPattern: mapping.start)
            let length = Int(mapping.end - mapping.start)
            // Random access first: a page faulted back is read alone, without read-around.
            if madvise(address, length, MADV_RANDOM) != 0 || madvise(address, length, MADV_DONTNEED) != 0 {
                outcome.error = SystemError(call: "madvise", errno: SystemError.current).description
                return outcome
            }
        }
        if let file = try? FileDescriptor.open(executable, .readOnly, options: .closeOnExec) {
            _ = posix_fadvise(file.rawValue, 0, 0, POSIX_FADV_DONTNEED)
            try? file.close()
        }
        return outcome
    }
}

/// Runs `ExecutablePages.release()` once, `after` the start (when the pipeline is in its steady
/// state), then waits for shutdown.
public struct ExecutablePagesService: Service {
    let after: Duration
    let clock: any Clock<Duration>
    let logger: Logger

    public init(after: Duration = .seconds(30), clock: any Clock<Duration> = ContinuousClock(), logger: Logger) {
        self.after = after
        self.clock = clock
        self.logger = logger
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown { try await clock.sleep(for: after, tolerance: .seconds(1)) }
        } catch {
            return
        }
        let outcome = ExecutablePages.release()
        if let error = outcome.error {
            logger.info("start-up pages not released", metadata: ["error": "\(error)"])
        } else {
            logger.debug(
                "start-up pages released",
                metadata: [
                    "mappings": "\(outcome.mappings)", "resident_kb_before": "\(outcome.residentKilobytesBefore)",
                ]
            )
        }
        try? await gracefulShutdown()
    }
}
