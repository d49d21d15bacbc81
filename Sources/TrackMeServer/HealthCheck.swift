import Foundation
import HTTPTypes
import Hummingbird
import TrackMeCore

extension ServerAPI {
    /// How long `/health` waits for the database: a balancer's check must get an answer, and
    /// one that does not come in this time is itself the answer. Real time, not the injected
    /// clock: it bounds a wait on a real socket or file.
    static let healthProbeTimeout: Duration = .seconds(3)

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

    /// The store's readiness within `healthProbeTimeout`, kept for `/metrics`.
    func probeReadiness() async -> StoreReadiness {
        let store = self.store
        let minimumFreeBytes = configuration.minimumFreeBytes
        let readiness =
            await Self.withinProbeTimeout { await store.readiness(minimumFreeBytes: minimumFreeBytes) }
            ?? StoreReadiness(answers: false, writable: false, problems: ["the database did not answer within \(Self.healthProbeTimeout)"])
        databaseHealth.readiness = readiness
        return readiness
    }

    /// `work`'s result, or nil when it takes longer than `healthProbeTimeout` (it is cancelled).
    static func withinProbeTimeout<T: Sendable>(_ work: @escaping @Sendable () async -> T) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await work() }
            group.addTask {
                try? await ContinuousClock().sleep(for: healthProbeTimeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
