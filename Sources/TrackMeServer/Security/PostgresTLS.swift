#if PostgreSQL
import Foundation
import NIOSSL
import PostgresNIO

/// TLS to PostgreSQL, chosen in the URL as libpq does: `?sslmode=verify-full` (encrypted, the
/// server's certificate checked against `sslrootcert=PATH` or the system store, and its name
/// against the URL's host) or `sslmode=disable` (the default: loopback, a Unix socket, a
/// tunnel). The modes that encrypt without checking who answers (`require`, `prefer`) are
/// refused: they protect against no one who can intercept the connection.
enum PostgresTLS {
    static func setting(_ components: URLComponents) throws -> PostgresClient.Configuration.TLS {
        let items = components.queryItems ?? []
        func value(_ name: String) -> String? { items.first { $0.name == name }?.value }
        switch value("sslmode") ?? "disable" {
        case "disable":
            return .disable
        case "verify-full":
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.certificateVerification = .fullVerification
            tls.minimumTLSVersion = .tlsv12
            if let root = value("sslrootcert") {
                guard FileManager.default.isReadableFile(atPath: root) else {
                    throw StoreError(code: .badConfiguration, message: "sslrootcert \(root) is not a readable file")
                }
                tls.trustRoots = .file(root)
            }
            return .require(tls)
        case let other:
            throw StoreError(
                code: .badConfiguration,
                message: "sslmode=\(other) is not supported: use verify-full (with sslrootcert=CA.pem for a private CA) or disable"
            )
        }
    }
}
#endif
