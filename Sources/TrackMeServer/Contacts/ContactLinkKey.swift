import Foundation

extension ConsoleConfiguration {
    /// The systemd credential the link key is read from (`LoadCredential=contact-link-key:PATH`).
    static let linkKeyCredential = "contact-link-key"

    /// Where the link key came from.
    enum LinkKeySource: String, Sendable {
        case file
        case credential
        case given
        /// Random for this process: links sent before a restart stop working.
        case ephemeral
    }

    /// Reads the link key from `contactLinkKeyFile`, else keeps one set in code, else reads the
    /// systemd credential when `credentialsDirectory` holds it. A file that is named but missing,
    /// unreadable or too short stops the start: links signed with a key other than the one
    /// intended would all fail.
    mutating func loadContactLinkKey() throws -> LinkKeySource {
        if let path = contactLinkKeyFile {
            givenLinkKey = try Self.readLinkKey(path, what: "--contact-link-key-file")
            return .file
        }
        if givenLinkKey != nil { return .given }
        if let directory = credentialsDirectory, !directory.isEmpty {
            let path = URL(fileURLWithPath: directory).appendingPathComponent(Self.linkKeyCredential).path
            if FileManager.default.fileExists(atPath: path) {
                givenLinkKey = try Self.readLinkKey(path, what: "credential \(Self.linkKeyCredential)")
                return .credential
            }
        }
        return .ephemeral
    }

    /// The first line of the file, at least 16 bytes.
    static func readLinkKey(_ path: String, what: String) throws -> [UInt8] {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ServerConfigurationError(message: "\(what): cannot read \(path): \(error.localizedDescription)")
        }
        let key = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        guard key.utf8.count >= 16 else { throw ServerConfigurationError(message: "\(what): the key in \(path) must be at least 16 bytes") }
        return Array(key.utf8)
    }
}
