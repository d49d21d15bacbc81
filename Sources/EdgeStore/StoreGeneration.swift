import Foundation

/// A small file next to the database (`PATH.generation`) that survives the database being moved
/// aside or deleted.
///
/// Sequence numbers and batch numbers must never be reused: the server keeps `(device_id, seq)`
/// once and answers a known idempotency key from its cache, so a fresh database that counted
/// from 1 again would have its readings silently taken for duplicates. Each fresh database
/// therefore starts its counters at `generation << 40` (a trillion readings per generation),
/// and the generation goes up every time a fresh database is created where one existed before.
struct StoreGeneration: Hashable, Sendable {
    var generation: Int64
    /// Corrupt databases moved aside over the device's life.
    var corruptionsMovedAside: Int64

    static let sequenceShift: Int64 = 40

    var sequenceBase: Int64 { generation << Self.sequenceShift }

    static func url(forStore path: String) -> URL { URL(fileURLWithPath: path + ".generation") }

    static func load(forStore path: String) -> StoreGeneration? {
        guard let data = try? Data(contentsOf: url(forStore: path)) else { return nil }
        let fields = String(decoding: data, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count == 2, let g = Int64(fields[0]), let c = Int64(fields[1]) else { return nil }
        return StoreGeneration(generation: g, corruptionsMovedAside: c)
    }

    func save(forStore path: String) throws {
        try Data("\(generation) \(corruptionsMovedAside)\n".utf8).write(to: Self.url(forStore: path), options: .atomic)
    }
}
