#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What the file system holding a path offers a writer now (`statvfs`): the bytes an
/// unprivileged writer may still use (`f_bavail`, not the root reserve) and whether it is
/// mounted read-only.
public struct FileSystemSpace: Sendable, Equatable {
    public var availableBytes: Int64
    public var readOnly: Bool

    public init(availableBytes: Int64, readOnly: Bool) {
        self.availableBytes = availableBytes
        self.readOnly = readOnly
    }

    /// The file system of `path` (a file or directory that exists), nil when it cannot be asked.
    public static func of(_ path: String) -> FileSystemSpace? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return FileSystemSpace(
            availableBytes: Int64(clamping: UInt64(info.f_bavail) &* UInt64(info.f_frsize)),
            readOnly: info.f_flag & UInt(ST_RDONLY) != 0
        )
    }
}
