import Hummingbird
import TrackMeCore

/// Who is who: sign-in and sessions, the accounts an admin keeps and the ones people make and
/// mend themselves (sign-up, address verification, password reset and change), organisations
/// registering, and the credentials an admin issues (device enrolment, dispatcher tokens, token
/// revocation and rotation), with the account pages.
///
/// Who may knock is declared once, in `access`; the room's doors are built from it. Nothing of a
/// person's data is read here. The room holds its `AccessRoomStore` and nothing of the hall's.
struct AccessRoom: Sendable {
    private static let signedIn: Set<Role> = Set(Role.allCases).subtracting([.device])

    static let access: [String: RouteAccess.Requirement] = [
        // Sessions: the password is the credential to open one.
        "POST /v1/session": .open, "GET /v1/session": .roles(signedIn), "DELETE /v1/session": .roles(signedIn),
        "POST /v1/organisations": .open,
        // Accounts people manage themselves: a signed link, or the current password, is the credential.
        "GET /v1/sign-up": .open, "POST /v1/sign-up": .open, "POST /v1/sign-up/verify": .open,
        "POST /v1/password-reset": .open, "POST /v1/password-reset/confirm": .open, "POST /v1/session/password": .roles(signedIn),
        "GET /account/sign-up": .open, "GET /account/verify": .open, "GET /account/reset": .open, "GET /account/password": .open,
        "GET /assets/account.js": .open,
        // What the administrator issues and takes back.
        "GET /v1/accounts": .roles([.admin]), "POST /v1/accounts": .roles([.admin]),
        "POST /v1/accounts/{id}/disable": .roles([.admin]), "POST /v1/accounts/{id}/enable": .roles([.admin]),
        "POST /v1/devices": .roles([.admin]), "POST /v1/dispatchers": .roles([.admin]),
        "GET /v1/tokens": .roles([.admin]), "POST /v1/tokens/{id}/revoke": .roles([.admin]), "POST /v1/tokens/{id}/rotate": .roles([.admin]),
    ]

    let store: any AccessRoomStore
    let services: RoomServices
    let passwords: PasswordHasher
    let signInGuard: SignInGuard

    var configuration: ServerConfiguration { services.configuration }

    var administration: ServerAdministration {
        ServerAdministration(store: store, wallClock: configuration.wallClock, dispatcherTokenLifetime: configuration.dispatcherTokenLifetime)
    }

    /// The room's routes at their full paths, each behind the door `access` declares; `page`
    /// serves a page or script with the pages' shared headers.
    func routes(page: @escaping @Sendable (EmbeddedFile, Request) -> Response) -> RouteCollection<ServerRequestContext> {
        let routes = RouteCollection(context: ServerRequestContext.self)
        let doors = RouteAccess.Doors(routes: routes, mountedAt: "", access: Self.access, authenticator: services.authenticator)
        let accounts = AccountRoutes(room: self)
        accounts.register(on: doors)
        accounts.registerSelfService(on: doors, page: page)
        TokenRoutes(room: self).register(on: doors)
        let room = self
        doors.on(.post, "/v1/devices") { request, _ in
            let enrolment = try await room.services.body(EnrolDeviceRequest.self, of: request)
            return try json(.created, try await room.administration.enrolDevice(deviceID: enrolment.deviceID, person: enrolment.person))
        }
        doors.on(.post, "/v1/dispatchers") { request, _ in
            let bytes = try await RequestBody.read(request, limit: room.configuration.maxBodyBytes)
            let body = bytes.isEmpty ? CreateDispatcherRequest() : try RequestBody.decode(CreateDispatcherRequest.self, bytes)
            if let days = body.expiresInDays, !(1...3650).contains(days) { throw APIError.invalid("expires_in_days", "must be 1-3650") }
            let credentials = try await room.administration.createDispatcher(
                name: body.name,
                lifetime: body.expiresInDays.map { .seconds($0 * 24 * 3600) }
            )
            return try json(.created, credentials)
        }
        return routes
    }
}

extension AccessRoom {
    /// 400 naming `username` for one outside `Account.isValidUsername`.
    static func checkUsername(_ username: String) throws {
        guard Account.isValidUsername(username) else { throw APIError.invalid("username", "1-64 characters of A-Z a-z 0-9 . _ - @") }
    }

    /// 400 naming `password` for one bcrypt cannot take whole (`PasswordHasher.passwordBytes`).
    static func checkPasswordBytes(_ password: String) throws {
        guard PasswordHasher.passwordBytes.contains(password.utf8.count) else {
            throw APIError.invalid("password", "must be \(PasswordHasher.passwordBytes.lowerBound)-\(PasswordHasher.passwordBytes.upperBound) bytes")
        }
    }

    /// Stores a new account; 409 naming the username when it is taken.
    func insertNew(_ account: Account) async throws {
        guard try await store.insertAccount(account) else {
            throw APIError(status: .conflict, code: .conflict, field: "username", message: "username \(account.username) is taken")
        }
    }
}

/// What the access room reads and writes: accounts, sessions and account links, tokens, and
/// the devices an admin enrols (with their first care settings).
protocol AccessRoomStore: AccountStore, TokenLifecycleStore, CareSettingsStore, Sendable {
    func insertToken(_ token: StoredToken, createdMilliseconds: Int64) async throws
    /// Enrols a device with its first token; false if the device id is taken.
    func enrolDevice(_ device: DeviceRow, token: StoredToken) async throws -> Bool
}
