import Foundation

/// Erases what the agent keeps of its wearer on the device: the store (with its WAL, shared
/// memory, generation file and any copies moved aside as corrupt: readings, alerts, the learned
/// baseline, care settings, the sealed token), the store key file and the device token file.
/// Used by `trackme-agent wipe` (a person returns the device) and after the server's wipe order.
///
/// Files are overwritten with zeros and synced before they are unlinked, so the blocks do not
/// hold the data on a plain file system (flash wear levelling may still keep old copies: full
/// disk encryption or the store key is the answer there, see hardware/STORE-KEY.md). A key held
/// as a systemd credential (`LoadCredentialEncrypted=`) lives outside the agent's reach: its
/// `/etc/credstore.encrypted/` file is removed by the operator (the wipe reports it).
public enum DeviceWipe {
    public struct Report: Sendable, Hashable {
        /// Files overwritten and removed.
        public var removed: [String]
        /// What the agent could not remove itself, for the operator.
        public var notes: [String]
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var path: String
        public var reason: String
        public var description: String { "cannot wipe \(path): \(reason)" }
    }

    /// The files `wipe` removes for `configuration`, those that exist.
    public static func files(_ configuration: AgentConfiguration) -> [String] {
        let store = configuration.store.path
        let directory = (store as NSString).deletingLastPathComponent
        let base = (store as NSString).lastPathComponent
        var files: [String] = []
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)) ?? []
        for name in names.sorted() where name == base || name.hasPrefix(base + "-") || name.hasPrefix(base + ".") {
            files.append((directory as NSString).appendingPathComponent(name))
        }
        for extra in [configuration.store.keyFile, configuration.server.tokenFile].compactMap({ $0 })
        where FileManager.default.fileExists(atPath: extra) {
            files.append(extra)
        }
        return files
    }

    /// Overwrites and removes every file of `files(configuration)`. The agent must not be
    /// running (the caller checks).
    public static func wipe(_ configuration: AgentConfiguration) throws(Failure) -> Report {
        var removed: [String] = []
        for path in files(configuration) {
            try overwrite(path)
            do {
                try FileManager.default.removeItem(atPath: path)
            } catch {
                throw Failure(path: path, reason: "\(error.localizedDescription)")
            }
            removed.append(path)
        }
        var notes: [String] = []
        if configuration.store.encryption != .off {
            notes.append(
                "a store key held as the systemd credential \(configuration.store.keyCredential) is not the agent's to remove: delete /etc/credstore.encrypted/\(configuration.store.keyCredential)"
            )
        }
        return Report(removed: removed, notes: notes)
    }

    private static func overwrite(_ path: String) throws(Failure) {
        guard let handle = FileHandle(forUpdatingAtPath: path) else {
            throw Failure(path: path, reason: "cannot open it for writing")
        }
        defer { try? handle.close() }
        do {
            let size = try handle.seekToEnd()
            try handle.seek(toOffset: 0)
            let chunk = Data(count: 1 << 16)
            var left = size
            while left > 0 {
                let count = Int(min(UInt64(chunk.count), left))
                try handle.write(contentsOf: chunk.prefix(count))
                left -= UInt64(count)
            }
            try handle.synchronize()
        } catch {
            throw Failure(path: path, reason: "\(error.localizedDescription)")
        }
    }
}
