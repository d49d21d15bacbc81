import EdgeStore
import Foundation
import Testing
import TrackMeCore

@testable import TrackMeAgent

/// Issue 17: the agent finds the store key in its systemd credential (or the fallback key file),
/// keeps the device token sealed in the store, and a wrong key is a clear `status` problem with
/// the encrypted file kept.
@Suite("store key in the agent", .serialized)
struct StoreKeyAssemblyTests {
    static let hexKey = String(repeating: "3c", count: 32)

    static func writeKey(_ path: String, hex: String = hexKey) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data((hex + "\n").utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: path)
    }

    static func configuration(_ directory: borrowing TemporaryDirectory, store extra: String = "") throws -> AgentConfiguration {
        try ConfigurationLoader.parse(
            yaml: """
                person: {name: Ada, age: 67}
                server: {url: "http://127.0.0.1:9", device_id: pi-enc, token_file: etc/token}
                strap:
                  transport: socketpair
                  trace: \(Repository.path("simulations/traces/hr/mitdb100_normal_sinus.csv"))
                  pace: 20
                store: {path: data/agent.sqlite\(extra)}
                status: {socket: agent.sock}
                """,
            baseDirectory: directory.path
        )
    }

    @Test("the credential's key seals the store; the token is kept sealed and the token file can go")
    func credentialAndToken() async throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("etc"), withIntermediateDirectories: true)
        try "token-enc-7".write(toFile: directory.file("etc/token"), atomically: true, encoding: .utf8)
        try Self.writeKey(directory.file("credentials/trackme-store-key"))
        let environment = ["CREDENTIALS_DIRECTORY": directory.file("credentials")]
        let configuration = try Self.configuration(directory, store: ", encryption: required")
        let keyID = try StoreKey.load(path: directory.file("credentials/trackme-store-key")).idText

        do {
            let parts = try AgentAssembly.make(configuration: configuration, logger: quietLogger, environment: environment)
            let status = await parts.control.status()
            #expect(status.store.keyID == keyID)
            #expect(StatusReport.render(status).contains("encrypted (key \(keyID))"))
        }
        // The token file removed: the agent starts with the token it sealed in the store.
        try FileManager.default.removeItem(atPath: directory.file("etc/token"))
        let store = try ReadingStore(
            configuration: EdgeStore.StoreConfiguration(
                path: configuration.store.path,
                encryptionKey: try StoreKey.load(path: directory.file("credentials/trackme-store-key"))
            ),
            logger: quietLogger
        )
        #expect(try AgentAssembly.deviceToken(configuration.server.tokenFile, store: store, logger: quietLogger) == "token-enc-7")
        store.close()
        _ = try AgentAssembly.make(configuration: configuration, logger: quietLogger, environment: environment)
        let raw =
            try Data(contentsOf: URL(fileURLWithPath: configuration.store.path))
            + ((try? Data(contentsOf: URL(fileURLWithPath: configuration.store.path + "-wal"))) ?? Data())
        #expect(raw.range(of: Data("token-enc-7".utf8)) == nil)
    }

    @Test("required without a key does not start, and says where the key is looked for")
    func requiredWithoutKey() throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("etc"), withIntermediateDirectories: true)
        try "token".write(toFile: directory.file("etc/token"), atomically: true, encoding: .utf8)
        let configuration = try Self.configuration(directory, store: ", encryption: required")
        #expect {
            _ = try AgentAssembly.make(configuration: configuration, logger: quietLogger, environment: [:])
        } throws: { error in
            "\(error)".contains("trackme-store-key") && "\(error)".contains("store.key_file")
        }
        // auto (the default) without a key: a store in clear, as before.
        let auto = try Self.configuration(directory)
        _ = try AgentAssembly.make(configuration: auto, logger: quietLogger, environment: [:])
        let store = try ReadingStore(configuration: EdgeStore.StoreConfiguration(path: auto.store.path), logger: quietLogger)
        #expect(!store.isEncrypted)
    }

    @Test("a wrong key file: the agent runs from memory, status names the problem, the file is kept byte for byte")
    func wrongKeyInStatus() async throws {
        let directory = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory.file("etc"), withIntermediateDirectories: true)
        try "token".write(toFile: directory.file("etc/token"), atomically: true, encoding: .utf8)
        let keys = try TemporaryDirectory()
        try Self.writeKey(keys.file("right.key"))
        try Self.writeKey(keys.file("wrong.key"), hex: String(repeating: "a7", count: 32))
        _ = try AgentAssembly.make(
            configuration: try Self.configuration(directory, store: ", key_file: \(keys.file("right.key"))"),
            logger: quietLogger,
            environment: [:]
        )
        let configuration = try Self.configuration(directory, store: ", key_file: \(keys.file("wrong.key"))")
        let before = try Data(contentsOf: URL(fileURLWithPath: configuration.store.path))

        let parts = try AgentAssembly.make(configuration: configuration, logger: quietLogger, environment: [:])
        let status = await parts.control.status()
        #expect(status.store.state == "memory_only")
        #expect(status.store.problem?.hasPrefix("wrong_key") == true)
        #expect(StatusReport.render(status).contains("wrong_key"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: configuration.store.path)) == before)
        #expect(!FileManager.default.fileExists(atPath: configuration.store.path + ".corrupt-1"))
        // With the token file gone (sealed in the store after the first start), a wrong key
        // still starts the agent: local SOS goes on, sync is refused until the key is fixed.
        try FileManager.default.removeItem(atPath: directory.file("etc/token"))
        let tokenless = try AgentAssembly.make(configuration: configuration, logger: quietLogger, environment: [:])
        #expect(await tokenless.control.status().store.problem?.hasPrefix("wrong_key") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: configuration.store.path)) == before)
    }

    @Test("configuration: encryption modes, a credential name, a key file not beside the database")
    func configurationKeys() throws {
        let directory = try TemporaryDirectory()
        let parsed = try Self.configuration(directory, store: ", encryption: off, key_credential: my-key, key_file: /etc/trackme-key/store.key")
        #expect(parsed.store.encryption == .off)
        #expect(parsed.store.keyCredential == "my-key")
        #expect(parsed.store.keyFile == "/etc/trackme-key/store.key")
        #expect(try Self.configuration(directory).store.encryption == .auto)
        #expect(throws: ConfigurationError.self) { try Self.configuration(directory, store: ", encryption: maybe") }
        #expect(throws: ConfigurationError.self) { try Self.configuration(directory, store: ", key_file: data/store.key") }
        #expect(throws: ConfigurationError.self) { try Self.configuration(directory, store: ", key_credential: ../x") }
    }
}
