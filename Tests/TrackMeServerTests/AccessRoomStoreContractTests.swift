import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The access room's store, held to one contract on every backend: the same cases, run on SQLite
/// and on PostgreSQL, against the store itself (no HTTP in between).
@Suite("AccessRoomStore contract")
struct AccessRoomStoreContractTests {
    static let start = IngestStoreContractTests.start

    /// A freshly migrated database of `backend` with `pi-0001` enrolled; the room's store over it.
    static func withStore(_ backend: Backend, _ body: (any AccessRoomStore) async throws -> Void) async throws {
        try await IngestStoreContractTests.withStores(backend) { hall, _ in
            let room: any AccessRoomStore = hall
            try await body(room)
        }
    }

    static func account(_ username: String, role: Role = .wearer, email: String? = nil) -> Account {
        Account(
            id: "acc-\(username)",
            username: username,
            displayName: username.capitalized,
            role: role,
            passwordHash: "$2b$04$hash-of-\(username)",
            disabled: false,
            createdMilliseconds: start,
            email: email
        )
    }

    static func session(_ id: String, account: String, expires: Int64 = start + 3_600_000) -> Session {
        Session(
            id: id,
            secretHash: String(repeating: "a", count: 64),
            accountID: account,
            csrfToken: "csrf-\(id)",
            createdMilliseconds: start,
            expiresMilliseconds: expires
        )
    }

    @Test("a username is taken once; accounts page in username order; an address finds its accounts whatever the case", arguments: Backend.enabled)
    func accountsOnce(backend: Backend) async throws {
        try await Self.withStore(backend) { (store: any AccessRoomStore) async throws in
            for name in ["carol", "alice", "bob"] { #expect(try await store.insertAccount(Self.account(name, email: "\(name)@example.org"))) }
            var taken = Self.account("alice")
            taken.id = "acc-other"
            #expect(try await store.insertAccount(taken) == false)
            #expect(try await store.account(username: "alice")?.id == "acc-alice")
            #expect(try await store.account(id: "acc-bob")?.username == "bob")
            #expect(try await store.accounts(after: nil, limit: 2).map(\.username) == ["alice", "bob"])
            #expect(try await store.accounts(after: "bob", limit: 2).map(\.username) == ["carol"])
            #expect(try await store.accounts(email: "BOB@Example.org").map(\.id) == ["acc-bob"])
        }
    }

    @Test("disabling an account ends its sessions; a session names its account; expired sessions go", arguments: Backend.enabled)
    func sessions(backend: Backend) async throws {
        try await Self.withStore(backend) { (store: any AccessRoomStore) async throws in
            #expect(try await store.insertAccount(Self.account("dora", role: .dispatcher)))
            #expect(try await store.insertAccount(Self.account("erik", role: .dispatcher)))
            try await store.insertSession(Self.session("s-dora", account: "acc-dora"))
            try await store.insertSession(Self.session("s-erik", account: "acc-erik", expires: Self.start + 10))
            #expect(try await store.session(id: "s-dora")?.1.username == "dora")
            #expect(try await store.deleteExpiredSessions(now: Self.start + 11) == 1)
            #expect(try await store.session(id: "s-erik") == nil)
            #expect(try await store.setAccountDisabled(id: "acc-dora", disabled: true))
            #expect(try await store.session(id: "s-dora") == nil, "a disabled account keeps no session")
            #expect(try await store.account(id: "acc-dora")?.disabled == true)
            #expect(try await store.setAccountDisabled(id: "acc-none", disabled: true) == false)
        }
    }

    @Test("wrong passwords count one by one; a right one moves the count aside; a new password ends every other session", arguments: Backend.enabled)
    func passwords(backend: Backend) async throws {
        try await Self.withStore(backend) { (store: any AccessRoomStore) async throws in
            #expect(try await store.insertAccount(Self.account("fay")))
            #expect(try await store.recordFailedSignIn(accountID: "acc-fay", atMilliseconds: Self.start + 1) == 1)
            #expect(try await store.recordFailedSignIn(accountID: "acc-fay", atMilliseconds: Self.start + 2) == 2)
            try await store.recordSignIn(accountID: "acc-fay")
            let signedIn = try #require(try await store.account(id: "acc-fay"))
            #expect(signedIn.failedSignIns == 0 && signedIn.failedSignInsBeforeLastSignIn == 2)
            try await store.insertSession(Self.session("s-1", account: "acc-fay"))
            try await store.insertSession(Self.session("s-2", account: "acc-fay"))
            #expect(try await store.setPassword(accountID: "acc-fay", passwordHash: "$2b$04$new", keepingSession: "s-2"))
            #expect(try await store.session(id: "s-1") == nil)
            #expect(try await store.session(id: "s-2") != nil)
            #expect(try await store.account(id: "acc-fay")?.passwordHash == "$2b$04$new")
            #expect(try await store.setPassword(accountID: "acc-none", passwordHash: "x", keepingSession: nil) == false)
        }
    }

    @Test("a reset link works once, unexpired, for its own account and purpose, and ends the sessions", arguments: Backend.enabled)
    func linksOnce(backend: Backend) async throws {
        try await Self.withStore(backend) { (store: any AccessRoomStore) async throws in
            #expect(try await store.insertAccount(Self.account("gus")))
            try await store.insertSession(Self.session("s-gus", account: "acc-gus"))
            let link = AccountLink(id: "link-1", accountID: "acc-gus", purpose: .passwordReset, expiresMilliseconds: Self.start + 1000, nonce: "n-1")
            try await store.insertAccountLink(
                StoredAccountLink(
                    id: link.id,
                    accountID: link.accountID,
                    purpose: link.purpose,
                    nonceHash: link.nonceHash,
                    createdMilliseconds: Self.start,
                    expiresMilliseconds: link.expiresMilliseconds
                )
            )
            var other = link
            other.purpose = .verifyAccount
            #expect(try await store.useAccountLink(other, atMilliseconds: Self.start + 1, newPasswordHash: nil) == .unknown)
            #expect(try await store.useAccountLink(link, atMilliseconds: Self.start + 5000, newPasswordHash: "$2b$04$late") == .expired)
            #expect(try await store.useAccountLink(link, atMilliseconds: Self.start + 2, newPasswordHash: "$2b$04$reset") == .done)
            #expect(try await store.useAccountLink(link, atMilliseconds: Self.start + 3, newPasswordHash: "$2b$04$again") == .used)
            #expect(try await store.account(id: "acc-gus")?.passwordHash == "$2b$04$reset")
            #expect(try await store.session(id: "s-gus") == nil)
        }
    }

    @Test("a device id is enrolled once; a token is replaced in one step and deleted once", arguments: Backend.enabled)
    func devicesAndTokens(backend: Backend) async throws {
        try await Self.withStore(backend) { (store: any AccessRoomStore) async throws in
            let token = StoredToken(id: "tok-again", secretHash: String(repeating: "1", count: 64), role: .device, deviceID: "pi-0001")
            let again = DeviceRow(deviceID: "pi-0001", person: PersonProfile(name: "Bo", age: 30), enrolledMilliseconds: Self.start)
            #expect(try await store.enrolDevice(again, token: token) == false)
            let dispatcher = StoredToken(id: "tok-disp", secretHash: String(repeating: "2", count: 64), role: .dispatcher)
            try await store.insertToken(dispatcher, createdMilliseconds: Self.start)
            let replacement = StoredToken(id: "tok-disp-2", secretHash: String(repeating: "3", count: 64), role: .dispatcher)
            #expect(try await store.replaceToken(id: "tok-disp", with: replacement, createdMilliseconds: Self.start + 1)?.id == "tok-disp")
            #expect(try await store.replaceToken(id: "tok-disp", with: replacement, createdMilliseconds: Self.start + 2) == nil)
            let ids = try await store.tokens(after: nil, limit: nil).map(\.tokenID)
            #expect(ids.contains("tok-disp-2") && !ids.contains("tok-disp"))
            #expect(try await store.deleteToken(id: "tok-disp-2"))
            #expect(try await store.deleteToken(id: "tok-disp-2") == false)
        }
    }
}
