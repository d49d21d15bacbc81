import Foundation
import HTTPTypes
import Hummingbird
import TrackMeCore

extension ServerHall {
    /// `/health`: 200 `ok` only when the database answers and a write would succeed now; 503
    /// `degraded` with the reasons otherwise, or `database_damaged` with what to do.
    func healthResponse() async throws -> Response {
        let retention = databaseHealth.retentionRefusal
        if let problem = databaseHealth.databaseProblem {
            return try json(
                .serviceUnavailable,
                HealthBody(status: "database_damaged", database: problem, retention: retention, message: DatabaseHealth.whatToDo)
            )
        }
        let readiness = await probeReadiness()
        guard readiness.answers, readiness.writable else {
            return try json(
                .serviceUnavailable,
                HealthBody(
                    status: "degraded",
                    retention: retention,
                    reasons: readiness.problems,
                    freeBytes: readiness.freeBytes,
                    message: "writes would fail: devices keep their readings and resend them once this is fixed"
                )
            )
        }
        // Exactly `{"status":"ok"}` when all is well (balancers and scripts match on it); the free
        // space is in /metrics.
        return try json(.ok, HealthBody(status: "ok", retention: retention))
    }

    /// The store's readiness within the configuration's `healthProbeTimeout`, kept for `/metrics`.
    func probeReadiness() async -> StoreReadiness {
        let store = self.store
        let minimumFreeBytes = configuration.minimumFreeBytes
        let timeout = configuration.healthProbeTimeout
        let readiness =
            await Task.value(within: timeout) { await store.readiness(minimumFreeBytes: minimumFreeBytes) }
            ?? StoreReadiness(answers: false, writable: false, problems: ["the database did not answer within \(timeout)"])
        databaseHealth.readiness = readiness
        return readiness
    }
}
