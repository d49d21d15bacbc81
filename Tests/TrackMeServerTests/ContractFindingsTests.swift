import Foundation
import Testing

/// What schemathesis (`make api-check`) found against the API document, kept as tests.
@Suite("Found by the API contract check", .timeLimit(.minutes(10)))
struct ContractFindingsTests {
    /// Enrolment's heart rates become the person's first care settings, so they meet the bounds a
    /// later change of those settings must meet (schemathesis enrolled a minimum of -16322 bpm).
    @Test("enrolment refuses heart-rate thresholds a change of care settings would refuse, and stores nothing", arguments: Backend.enabled)
    func enrolmentThresholds(backend: Backend) async throws {
        try await TestServer.with(backend) { s in
            let cases: [(person: [String: Any], field: String)] = [
                (["name": "Ada", "age": 70, "min_hr": -16322], "person.min_hr"),
                (["name": "Ada", "age": 70, "max_hr": 2413], "person.max_hr"),
                (["name": "Ada", "age": 70, "resting_hr": 0], "person.resting_hr"),
                (["name": "Ada", "age": 70, "min_hr": 120, "max_hr": 60], "person.min_hr"),
            ]
            for (index, item) in cases.enumerated() {
                let id = "bad-hr-\(index)"
                let refused = try await s.client.send(
                    "POST",
                    "/v1/devices",
                    token: TestServer.adminToken,
                    json: ["device_id": id, "person": item.person]
                )
                #expect(refused.status == 400, "\(refused.text)")
                #expect(refused.errorField == item.field)
                let settings = try await s.client.send("GET", "/v1/devices/\(id)/care-settings", token: TestServer.adminToken)
                #expect(settings.status == 404, "\(id) was enrolled: \(settings.text)")
            }
            let accepted = try await s.client.send(
                "POST",
                "/v1/devices",
                token: TestServer.adminToken,
                json: ["device_id": "good-hr", "person": ["name": "Ada", "age": 70, "min_hr": 45, "max_hr": 150]]
            )
            #expect(accepted.status == 201, "\(accepted.text)")
        }
    }
}
