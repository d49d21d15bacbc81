import Foundation

/// The server's SQLite file holds people's health data and token hashes: it is created 0600 (its
/// folder 0700 when the server creates it), and an existing file, WAL or shared-memory file
/// readable by others is narrowed to 0600. SQLite gives the `-wal` and `-shm` files it creates
/// the mode of the database file.
enum PrivateFile {
    static func prepareDatabase(at path: String) throws {
        let files = FileManager.default
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !files.fileExists(atPath: directory) {
            try files.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        // Empty until SQLite writes its header, so nothing is readable before the mode is set.
        if !files.fileExists(atPath: path), !files.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) {
            throw StoreError(code: .unavailable, message: "cannot create \(path)")
        }
        for file in [path, path + "-wal", path + "-shm"] where files.fileExists(atPath: file) {
            let mode = (try files.attributesOfItem(atPath: file)[.posixPermissions] as? NSNumber)?.intValue ?? 0o777
            if mode & 0o077 != 0 {
                do {
                    try files.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
                } catch {
                    throw StoreError(code: .unavailable, message: "cannot make \(file) private (0600): \(error)")
                }
            }
        }
    }
}
