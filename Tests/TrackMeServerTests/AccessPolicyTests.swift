import Testing

@testable import TrackMeServer

@Suite("AccessPolicy: may this principal read this person's data now")
struct AccessPolicyTests {
    static let now: Int64 = 1_800_000_000_000
    static let hour: Int64 = 3_600_000

    static func principal(_ role: Role, account: String? = "acc-1", device: String? = nil) -> Principal {
        Principal(role: role, tokenID: "t", deviceID: device, accountID: account)
    }

    static let subject = AccessPolicy.Subject(personID: "p-1", deviceIDs: ["pi-0001"])

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var principal: Principal
        var subject: AccessPolicy.Subject
        var expected: AccessPolicy.Decision
        var testDescription: String { name }
    }

    static let cases: [Case] = {
        let s = subject
        func with(_ change: (inout AccessPolicy.Subject) -> Void) -> AccessPolicy.Subject {
            var copy = s
            change(&copy)
            return copy
        }
        return [
            Case(name: "admin always", principal: principal(.admin), subject: s, expected: .allowed(.administrator)),
            Case(
                name: "the person's own device",
                principal: principal(.device, account: nil, device: "pi-0001"),
                subject: s,
                expected: .allowed(.ownDevice)
            ),
            Case(name: "another device", principal: principal(.device, account: nil, device: "pi-0002"), subject: s, expected: .denied),
            Case(name: "dispatcher without an alert", principal: principal(.dispatcher), subject: s, expected: .denied),
            Case(
                name: "dispatcher, alert open",
                principal: principal(.dispatcher),
                subject: with { $0.alerts = [.init(openedMilliseconds: now - hour, closedMilliseconds: nil)] },
                expected: .allowed(.openAlert)
            ),
            Case(
                name: "dispatcher, alert closed an hour ago",
                principal: principal(.dispatcher),
                subject: with { $0.alerts = [.init(openedMilliseconds: now - 2 * hour, closedMilliseconds: now - hour)] },
                expected: .allowed(.recentlyClosedAlert)
            ),
            Case(
                name: "dispatcher, alert closed two days ago",
                principal: principal(.dispatcher),
                subject: with { $0.alerts = [.init(openedMilliseconds: now - 50 * hour, closedMilliseconds: now - 48 * hour)] },
                expected: .denied
            ),
            Case(
                name: "dispatcher, alert opening in the future is no reason",
                principal: principal(.dispatcher),
                subject: with { $0.alerts = [.init(openedMilliseconds: now + hour, closedMilliseconds: nil)] },
                expected: .denied
            ),
            Case(
                name: "third party with consent",
                principal: principal(.thirdParty),
                subject: with { $0.consents = [.init(accountID: "acc-1", fromMilliseconds: now - hour, untilMilliseconds: now + hour)] },
                expected: .allowed(.consent)
            ),
            Case(
                name: "third party, consent expired",
                principal: principal(.thirdParty),
                subject: with { $0.consents = [.init(accountID: "acc-1", fromMilliseconds: now - 2 * hour, untilMilliseconds: now)] },
                expected: .denied
            ),
            Case(
                name: "third party, consent withdrawn",
                principal: principal(.thirdParty),
                subject: with { $0.consents = [.init(accountID: "acc-1", fromMilliseconds: now - hour, untilMilliseconds: nil, withdrawn: true)] },
                expected: .denied
            ),
            Case(
                name: "carer, consent given to someone else",
                principal: principal(.carer),
                subject: with { $0.consents = [.init(accountID: "acc-2", fromMilliseconds: now - hour, untilMilliseconds: nil)] },
                expected: .denied
            ),
            Case(
                name: "carer the person linked",
                principal: principal(.carer),
                subject: with { $0.carers = [.init(accountID: "acc-1", mayExport: false)] },
                expected: .allowed(.carer)
            ),
            Case(
                name: "carer linked by another person",
                principal: principal(.carer),
                subject: with { $0.carers = [.init(accountID: "acc-2", mayExport: true)] },
                expected: .denied
            ),
            Case(
                name: "a wearer named in the carers is no carer",
                principal: principal(.wearer),
                subject: with { $0.carers = [.init(accountID: "acc-1", mayExport: true)] },
                expected: .denied
            ),
            Case(
                name: "organiser during the run",
                principal: principal(.organiser),
                subject: with { $0.runs = [.init(organiserAccountID: "acc-1", startMilliseconds: now - hour, endMilliseconds: now + hour)] },
                expected: .allowed(.joinedRun)
            ),
            Case(
                name: "organiser after the run",
                principal: principal(.organiser),
                subject: with { $0.runs = [.init(organiserAccountID: "acc-1", startMilliseconds: now - 3 * hour, endMilliseconds: now - hour)] },
                expected: .denied
            ),
            Case(name: "fleet operator without consent", principal: principal(.fleetOperator), subject: s, expected: .denied),
        ]
    }()

    @Test(arguments: cases)
    func decide(_ c: Case) {
        #expect(AccessPolicy().decide(c.principal, subject: c.subject, now: Self.now) == c.expected)
    }

    @Test("a carer's grant covers every kind, and downloads only when the person allowed them")
    func carerGrants() {
        var subject = Self.subject
        subject.carers = [.init(accountID: "acc-1", mayExport: false)]
        let grants = AccessPolicy().grants(Self.principal(.carer), subject: subject, now: Self.now)
        #expect(grants.map(\.reason) == [.carer])
        #expect(grants.allSatisfy { $0.covers(.position) && $0.covers(.heartRate) && !$0.export })
        subject.carers = [.init(accountID: "acc-1", mayExport: true)]
        #expect(AccessPolicy().grants(Self.principal(.carer), subject: subject, now: Self.now).map(\.export) == [true])
        // The person's own grant and an admin's cover downloads.
        #expect(AccessPolicy().grants(Self.principal(.admin), subject: subject, now: Self.now).map(\.export) == [true])
    }

    @Test("every role is decided (none falls through to allowed by default)")
    func everyRoleWithoutFactsIsDeniedButAdmin() {
        for role in Role.allCases {
            let decision = AccessPolicy().decide(Self.principal(role), subject: AccessPolicy.Subject(personID: "p"), now: Self.now)
            #expect(decision.isAllowed == (role == .admin), "\(role)")
        }
    }
}
