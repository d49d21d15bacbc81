import HummingbirdCore
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// The server's certificate chain and private key, as PEM files (the configuration names them).
public struct ServerTLS: Hashable, Sendable {
    /// The leaf certificate first, then any intermediates.
    public var certificateChainPath: String
    public var privateKeyPath: String

    public init(certificateChainPath: String, privateKeyPath: String) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
    }
}

/// Why the server refuses to start: its configuration contradicts itself.
public struct ServerConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// The TLS context new connections get. `reload()` reads the files again (on SIGHUP): from then
/// on new connections get the new certificate; connections already open keep theirs and are
/// not dropped. A failed reload keeps the old context.
final class TLSCertificates: Sendable {
    let files: ServerTLS
    private let context: Mutex<NIOSSLContext>

    init(_ files: ServerTLS) throws {
        self.files = files
        context = Mutex(try Self.load(files))
    }

    var current: NIOSSLContext { context.withLock { $0 } }

    func reload() throws {
        let fresh = try Self.load(files)
        context.withLock { $0 = fresh }
    }

    static func load(_ files: ServerTLS) throws -> NIOSSLContext {
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(files.certificateChainPath)
            guard !chain.isEmpty else {
                throw ServerConfigurationError(message: "no certificate in \(files.certificateChainPath)")
            }
            let key = try NIOSSLPrivateKey(file: files.privateKeyPath, format: .pem)
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) },
                privateKey: .privateKey(key)
            )
            configuration.minimumTLSVersion = .tlsv12
            return try NIOSSLContext(configuration: configuration)
        } catch let error as ServerConfigurationError {
            throw error
        } catch {
            throw ServerConfigurationError(
                message: "cannot load TLS certificate \(files.certificateChainPath) and key \(files.privateKeyPath): \(error)"
            )
        }
    }
}

/// Puts TLS (with the context current when the connection is accepted) under the HTTP channel.
struct ReloadableTLSChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    let certificates: TLSCertificates

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let context = certificates.current
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
