import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

extension TestServer {
    /// Reads a paged list whole by following `next`, `limit` items a page; returns every page's
    /// items in order and how many pages it took.
    func allPages(
        _ path: String,
        key: String,
        limit: Int,
        get: (String) async throws -> HTTPTestClient.Response
    ) async throws -> (items: [[String: Any]], pages: Int) {
        var items: [[String: Any]] = []
        var after: String?
        var pages = 0
        repeat {
            let separator = path.contains("?") ? "&" : "?"
            var query = "\(path)\(separator)limit=\(limit)"
            if let after { query += "&after=\(after.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? after)" }
            let response = try await get(query)
            try #require(response.status == 200, "\(query): \(response.text)")
            let page = try #require(response.object[key] as? [[String: Any]], "\(query): \(response.text)")
            #expect(page.count <= limit)
            items += page
            after = response.object["next"] as? String
            pages += 1
            // A list that stopped moving would loop for ever.
            try #require(pages <= 1000)
        } while after != nil
        return (items, pages)
    }
}

@Suite("Lists page: limit, after, next")
struct PagingTests {
    @Test("the devices list is read whole by following next, each device once, in id order", arguments: Backend.enabled)
    func devices(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let ids = (1...23).map { String(format: "pi-%04d", $0) }
            for id in ids.shuffled() { _ = try await s.enrol(id) }
            let (items, pages) = try await s.allPages("/v1/devices", key: "devices", limit: 5) { path in
                try await s.client.send("GET", path, token: TestServer.adminToken)
            }
            #expect(items.compactMap { $0["device_id"] as? String } == ids)
            #expect(pages == 5)
            // An exact multiple of the page ends without an empty page.
            let (whole, wholePages) = try await s.allPages("/v1/devices", key: "devices", limit: 23) { path in
                try await s.client.send("GET", path, token: TestServer.adminToken)
            }
            #expect(whole.count == 23 && wholePages == 1)
        }
    }

    @Test("the closed alerts' history pages by time and id: alerts closed in the same millisecond each come once", arguments: Backend.enabled)
    func alertHistory(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let device = try await s.enrol("pi-0001")
            var closed: [String] = []
            for n in 0..<14 {
                let id = String(format: "alert-%02d", n)
                #expect(try await s.postAlert(Sample.alert("pi-0001", id: id), token: device).status == 200)
                #expect(try await s.postAlert(Sample.alert("pi-0001", id: id, updateSeq: 1, type: .cancelled), token: device).status == 200)
                closed.append(id)
                // Half of them share their closing time with another.
                if n % 2 == 1 { s.wall.advance(milliseconds: 1000) }
            }
            #expect(try await s.postAlert(Sample.alert("pi-0001", id: "still-open"), token: device).status == 200)
            let (items, pages) = try await s.allPages("/v1/alerts?status=closed", key: "alerts", limit: 3) { path in
                try await s.client.send("GET", path, token: TestServer.adminToken)
            }
            let listed = items.compactMap { $0["alert_id"] as? String }
            #expect(listed.count == 14)
            #expect(Set(listed) == Set(closed))
            #expect(pages == 5)
            // Newest first: the last pair closed is at the top.
            #expect(Set(listed.prefix(2)) == ["alert-12", "alert-13"])
            // The board is one page: a cursor there is refused.
            let board = try await s.client.send("GET", "/v1/alerts?status=open", token: TestServer.adminToken)
            #expect((board.object["alerts"] as? [[String: Any]])?.count == 1)
            #expect(board.object["next"] == nil)
            let cursor = PageCursor("1", "alert-00").text
            let refused = try await s.client.send("GET", "/v1/alerts?status=open&after=\(cursor)", token: TestServer.adminToken)
            #expect(refused.status == 400 && refused.errorField == "after")
        }
    }

    @Test("accounts, tokens and a person's access log and access requests page the same way", arguments: Backend.enabled)
    func otherLists(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let admin = TestServer.adminToken
            let names = (1...11).map { String(format: "user%02d", $0) }
            for name in names.shuffled() { _ = try await s.createAccount(name, role: "dispatcher") }
            let accounts = try await s.allPages("/v1/accounts", key: "accounts", limit: 4) { try await s.client.send("GET", $0, token: admin) }
            #expect(accounts.items.compactMap { $0["username"] as? String } == names)
            #expect(accounts.pages == 3)

            for n in 1...9 { _ = try await s.enrol(String(format: "pi-%04d", n)) }
            let tokens = try await s.allPages("/v1/tokens", key: "tokens", limit: 4) { try await s.client.send("GET", $0, token: admin) }
            // Enrolled in the same millisecond: the token ids order them, each once.
            let tokenDevices = tokens.items.compactMap { $0["device_id"] as? String }
            #expect(tokenDevices.count == 9, "\(tokens.items)")
            #expect(Set(tokenDevices) == Set((1...9).map { String(format: "pi-%04d", $0) }))
            #expect(tokens.pages == 3)

            let (ada, _) = try await s.wearer("ada", device: "pi-0100")
            for n in 0..<25 {
                try await s.server.store.appendAccessLog(
                    AccessLogEntry(
                        id: 0,
                        subject: n % 2 == 0 ? "person:\(ada)" : "device:pi-0100",
                        readerID: "reader",
                        readerName: "A reader",
                        readerRole: "dispatcher",
                        reason: "alert",
                        what: "read \(n)",
                        atMilliseconds: TestServer.startWall
                    )
                )
            }
            // Another person's entry is never on Ada's pages.
            try await s.server.store.appendAccessLog(
                AccessLogEntry(
                    id: 0,
                    subject: "device:pi-0001",
                    readerID: "reader",
                    readerName: "A reader",
                    readerRole: "dispatcher",
                    reason: "alert",
                    what: "someone else",
                    atMilliseconds: TestServer.startWall
                )
            )
            let log = try await s.allPages("/v1/people/\(ada)/access-log", key: "entries", limit: 6) {
                try await s.client.send("GET", $0, token: admin)
            }
            #expect(log.items.compactMap { $0["what"] as? String } == (0..<25).reversed().map { "read \($0)" })
            #expect(log.pages == 5)

            for n in 0..<7 {
                try await s.server.store.insertAccessRequest(
                    AccessRequest(
                        id: String(format: "request-%02d", n),
                        organisationID: "org-1",
                        personID: ada,
                        kinds: [.heartRate],
                        days: 30,
                        dataFromMilliseconds: nil,
                        purpose: "study",
                        status: .pending,
                        requestedMilliseconds: TestServer.startWall + Int64(n / 2)
                    )
                )
            }
            let requests = try await s.allPages("/v1/people/\(ada)/access-requests", key: "requests", limit: 2) {
                try await s.client.send("GET", $0, token: admin)
            }
            #expect(requests.items.compactMap { $0["id"] as? String } == (0..<7).reversed().map { String(format: "request-%02d", $0) })
            #expect(requests.pages == 4)
        }
    }

    @Test(
        "a person's alerts, the desk's and the kept ones merged, are read whole by following next, each once, newest first",
        arguments: Backend.enabled
    )
    func personAlerts(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (_, device, session, _) = try await UndispatchedAlertTests.unenrolled(s)
            var sent: [String] = []
            for n in 0..<13 {
                // SOS presses reach the desk; the rules' alerts are kept (AutomatedSOS is off).
                let id = String(format: "alert-%02d", n)
                let kind: AlertKind = n % 3 == 0 ? .manual : .heartRateHigh
                #expect(try await s.postAlert(UndispatchedAlertTests.alert("pi-0001", id: id, kind: kind), token: device).status == 200)
                sent.append(id)
                if n % 2 == 1 { s.wall.advance(milliseconds: 1000) }
            }
            let (items, pages) = try await s.allPages("/v1/people/me/alerts", key: "alerts", limit: 4) { try await s.page("GET", $0, session) }
            let listed = items.compactMap { $0["alert_id"] as? String }
            #expect(listed == sent.reversed())
            #expect(pages == 4)
            #expect(items.filter { $0["dispatched"] as? Bool == true }.count == 5)
        }
    }

    @Test(
        "a limit outside 1-1000 or not a number, and a cursor that is not the list's, are 400 naming the parameter",
        arguments: Backend.enabled
    )
    func badPages(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let (ada, _) = try await s.wearer("ada", device: "pi-0001")
            let lists = [
                "/v1/devices", "/v1/alerts?status=closed", "/v1/accounts", "/v1/tokens", "/v1/people/\(ada)/access-log",
                "/v1/people/\(ada)/access-requests", "/v1/people/\(ada)/alerts",
            ]
            let deviceCursor = PageCursor("pi-0001").text
            for list in lists {
                let separator = list.contains("?") ? "&" : "?"
                for query in ["limit=0", "limit=1001", "limit=ten", "limit=-1"] {
                    let response = try await s.client.send("GET", "\(list)\(separator)\(query)", token: TestServer.adminToken)
                    #expect(response.status == 400, "\(list) \(query)")
                    #expect(response.errorField == "limit" && response.errorCode == "invalid_value", "\(list) \(query): \(response.text)")
                }
                for cursor in ["%21%21%21", "not*base64"] {
                    let response = try await s.client.send("GET", "\(list)\(separator)after=\(cursor)", token: TestServer.adminToken)
                    #expect(response.status == 400, "\(list) \(cursor)")
                    #expect(response.errorField == "after" && response.errorCode == "invalid_value", "\(list) \(cursor): \(response.text)")
                }
            }
            // Another list's cursor: a device id where an access-log id or a time and id belong.
            for list in [
                "/v1/alerts?status=closed", "/v1/tokens", "/v1/people/\(ada)/access-log", "/v1/people/\(ada)/access-requests",
                "/v1/people/\(ada)/alerts",
            ] {
                let separator = list.contains("?") ? "&" : "?"
                let response = try await s.client.send("GET", "\(list)\(separator)after=\(deviceCursor)", token: TestServer.adminToken)
                #expect(response.status == 400 && response.errorField == "after", "\(list): \(response.text)")
            }
        }
    }

    @Test("a cursor's parts come back as they went, and a cursor is opaque URL-safe text")
    func cursorRoundTrip() throws {
        for parts in [["pi-0001"], ["1795000000000", "alert/with+odd=chars"], ["42"], ["ü", ""]] {
            var cursor = PageCursor()
            cursor.parts = parts
            let text = cursor.text
            #expect(text.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
            #expect(PageCursor(text: text)?.parts == parts)
        }
        #expect(PageCursor(text: "") == nil)
        let key = try PageCursor("1795000000000", "a").timeAndID()
        #expect(key.milliseconds == 1_795_000_000_000 && key.id == "a")
        #expect(throws: APIError.self) { try PageCursor("a", "b").integer() }
    }
}
