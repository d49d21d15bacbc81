public import Logging

/// Token lifecycle on a server's database without serving: the `trackme-server token` CLI.
public struct TokenAdministrator: Sendable {
    let administration: ServerAdministration

    /// Opens (and migrates) the store, runs `body`, closes the store.
    public static func with<T: Sendable>(
        _ storage: StorageLocation,
        logger: Logger,
        wallClock: @escaping @Sendable () -> Int64 = ServerConfiguration.systemWallClock,
        dispatcherTokenLifetime: Duration? = ServerConfiguration.defaultDispatcherTokenLifetime,
        _ body: (TokenAdministrator) async throws -> T
    ) async throws -> T {
        let store = try await TrackMeServer.openStore(storage, logger: logger)
        do {
            try await store.migrate()
            let result = try await body(
                TokenAdministrator(
                    administration: ServerAdministration(store: store, wallClock: wallClock, dispatcherTokenLifetime: dispatcherTokenLifetime)
                )
            )
            try await store.close()
            return result
        } catch {
            try? await store.close()
            throw error
        }
    }

    public func tokens() async throws -> [TokenSummary] {
        try await administration.tokens()
    }

    public func revoke(tokenID: String) async throws {
        try await administration.revokeToken(id: tokenID)
    }

    public func rotate(tokenID: String) async throws -> RotatedToken {
        try await administration.rotateToken(id: tokenID)
    }
}
