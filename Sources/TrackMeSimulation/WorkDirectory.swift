import Foundation
import TrackMeSystem

/// Where a run keeps the devices' stores and the server's database, removed when the run ends.
///
/// Fast mode may replace the kernel's I/O, never a decision: the stores still commit at every
/// point they commit live, but with no fsync their files may as well live in memory. On a
/// machine with a tmpfs at `/dev/shm` and room on it, they do: no commit then waits on the disk,
/// and SQLite's checkpoints have no disk to write back to (a 300-taxi morning replayed 0.85 times
/// as long there as in `/tmp` on a disk; `simulations/BENCHMARKS.md`). A run whose commits fsync
/// (`--fsync`, field mode) keeps its files on the temporary directory's disk, whose fsync is
/// the cost it asked to see.
enum WorkDirectory {
    static let memoryBacked = "/dev/shm"
    /// What a run may fill: the 1,000-wearer hour's server database is the largest, under 2 GiB.
    static let memoryRoomBytes: Int64 = 2 << 30

    static func make(_ prefix: String, inMemory: Bool) throws -> URL {
        let parent =
            if inMemory, let space = FileSystemSpace.of(memoryBacked), !space.readOnly, space.availableBytes >= memoryRoomBytes,
                FileManager.default.isWritableFile(atPath: memoryBacked)
            {
                URL(fileURLWithPath: memoryBacked, isDirectory: true)
            } else {
                FileManager.default.temporaryDirectory
            }
        let work = parent.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        return work
    }
}
