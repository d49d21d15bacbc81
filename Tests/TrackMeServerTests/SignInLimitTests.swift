import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// A sign-in flood costs the flooder: attempts per address and wrong passwords per account are
/// throttled before any bcrypt, bcrypt runs on a small pool of its own with a bounded queue,
/// the counts are shown to the owner and the admin, and registering organisations is limited.
@Suite("Sign-in limits")
struct SignInLimitTests {
    static func limits(_ change: (inout ServerLimits) -> Void) -> ServerLimits {
        var limits = ServerLimits.withoutRateLimits
        change(&limits)
        return limits
    }

    @Test("sign-ins from one address past the limit are 429 with Retry-After, right password or not; later allowed again", arguments: Backend.enabled)
    func perAddress(backend: Backend) async throws {
        let limits = Self.limits { $0.signInsPerAddress = RateLimit(burst: 3, perSecond: 1.0 / 60) }
        try await TestServer.with(backend, limits: limits) { s in
            try await s.createAccount("dana")
            try await s.createAccount("erik")
            for _ in 0..<3 {
                #expect(try await s.client.send("POST", "/v1/session", json: ["username": "dana", "password": "wrong password"]).status == 401)
            }
            // Another account, the right password: the address is what is limited.
            let refused = try await s.client.send("POST", "/v1/session", json: ["username": "erik", "password": "correct horse"])
            #expect(refused.status == 429, "\(refused.text)")
            #expect(Int(refused.headers["retry-after"] ?? "") ?? 0 >= 1)
            s.wall.advance(milliseconds: 60_000)
            _ = try await s.signIn("erik")
        }
    }

    @Test(
        "five wrong passwords in a row: the account waits a minute (429), then signs in; the owner and the admin see the count",
        arguments: Backend.enabled
    )
    func perAccount(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let id = try await s.createAccount("dana")
            for _ in 0..<5 {
                #expect(try await s.client.send("POST", "/v1/session", json: ["username": "dana", "password": "wrong password"]).status == 401)
            }
            let waiting = try await s.client.send("POST", "/v1/session", json: ["username": "dana", "password": "correct horse"])
            #expect(waiting.status == 429, "\(waiting.text)")
            #expect(Int(waiting.headers["retry-after"] ?? "") == 60)
            let listed = try await s.client.send("GET", "/v1/accounts", token: TestServer.adminToken)
            let account = try #require((listed.object["accounts"] as? [[String: Any]])?.first { $0["id"] as? String == id })
            #expect(account["failed_sign_ins"] as? Int == 5)
            #expect(account["last_failed_sign_in_ms"] as? Int == Int(TestServer.startWall))
            s.wall.advance(milliseconds: 60_000)
            let signedIn = try await s.client.send("POST", "/v1/session", json: ["username": "dana", "password": "correct horse"])
            #expect(signedIn.status == 200, "\(signedIn.text)")
            #expect((signedIn.object["account"] as? [String: Any])?["failed_sign_ins"] as? Int == 5)
            let session = try await s.signIn("dana")
            let current = try await s.page("GET", "/v1/session", session)
            let mine = try #require(current.object["account"] as? [String: Any])
            #expect(mine["failed_sign_ins"] as? Int == 0)
            #expect(mine["failed_sign_ins_before_last_sign_in"] as? Int == 5)
        }
    }

    @Test("organisations registering from one address past the limit are 429", arguments: Backend.enabled)
    func registrations(backend: Backend) async throws {
        let limits = Self.limits { $0.registrationsPerAddress = RateLimit(burst: 2, perSecond: 1.0 / 600) }
        try await TestServer.with(backend, limits: limits) { s in
            for index in 0..<2 {
                let body: [String: Any] = ["username": "org-\(index)", "password": "a long passphrase", "role": "third_party"]
                #expect(try await s.client.send("POST", "/v1/organisations", json: body).status == 201)
            }
            let body: [String: Any] = ["username": "org-9", "password": "a long passphrase", "role": "third_party"]
            let refused = try await s.client.send("POST", "/v1/organisations", json: body)
            #expect(refused.status == 429)
            #expect(refused.headers["retry-after"] != nil)
        }
    }

    @Test("a flood of sign-ins runs bcrypt on one thread with a bounded queue: the rest are 503 with Retry-After, none waits unbounded")
    func boundedHashing() async throws {
        let limits = Self.limits {
            $0.passwordHashThreads = 1
            $0.passwordHashQueue = 4
            $0.failedSignInsBeforeDelay = 1000
        }
        let console: (inout ConsoleConfiguration) -> Void = { $0.bcryptCost = 12 }
        try await TestServer.with(.sqlite, limits: limits, console: console) { s in
            try await s.createAccount("dana")
            let client = s.client
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<24 {
                    group.addTask {
                        try await client.send("POST", "/v1/session", json: ["username": "dana", "password": "wrong password"]).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == 401 || $0 == 503 }, "\(statuses)")
            #expect(statuses.contains(503), "\(statuses)")
            #expect(statuses.filter { $0 == 401 }.count >= 4)
            #expect(s.server.hall.access.passwords.pool.threadsStarted == 1)
            #expect(s.server.hall.access.passwords.inFlight == 0)
        }
    }
}

/// People's heavy reads queue behind their own limit, never in front of device intake.
@Suite("Heavy request gate")
struct HeavyRequestGateTests {
    @Test("one heavy request per principal, `limit` in all; a slot frees when its request ends")
    func admission() {
        let gate = HeavyRequestGate(limit: 2)
        #expect(gate.enter("token:a") == .admitted)
        #expect(gate.enter("token:a") == .principalBusy)
        #expect(gate.enter("session:b") == .admitted)
        #expect(gate.enter("address:c") == .serverBusy)
        gate.leave("token:a")
        #expect(gate.enter("address:c") == .admitted)
        #expect(gate.running == 2)
    }

    @Test("exports, GPX, statistics and group figures are heavy; intake, alerts and other reads are not")
    func heavyPaths() {
        for path in ["/v1/people/p1/export", "/v1/people/p1/track.gpx", "/v1/people/p1/statistics", "/v1/group-figures"] {
            #expect(HeavyRequestMiddleware.isHeavy(Substring(path)), "\(path)")
        }
        for path in ["/v1/batches", "/v1/alerts", "/v1/heartbeats", "/v1/people/p1/heart-rate", "/health", "/v1/people/p1"] {
            #expect(!HeavyRequestMiddleware.isHeavy(Substring(path)), "\(path)")
        }
    }
}
