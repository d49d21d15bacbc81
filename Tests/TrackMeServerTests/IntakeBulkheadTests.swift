import Dispatch
import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// Batches are inflated, decoded and checked on threads of their own with a bounded queue; an
/// alert never needs those threads, so an SOS is taken in while every one of them is busy.
@Suite("Intake bulkhead")
struct IntakeBulkheadTests {
    @Test(
        "with every batch thread held and its queue full, a new batch is told to come back (503, Retry-After) and an alert is still stored; the queued batch is stored once the thread is free",
        arguments: Backend.enabled
    )
    func alertPassesBusyBatches(backend: Backend) async throws {
        var limits = ServerLimits.withoutRateLimits
        limits.batchThreads = 1
        limits.batchQueue = 2
        try await TestServer.with(backend, limits: limits) { s in
            let alerter = try await s.enrol("pi-alert")
            let syncer = try await s.enrol("pi-sync")
            let batchWork = s.server.hall.ingest.batchWork
            // The one batch thread, held by work that waits for the test.
            let release = DispatchSemaphore(value: 0)
            let holder = Task { try await batchWork.run(busy: IngestRoom.batchesBusy) { release.wait() } }
            try await eventually("the batch thread is held", within: .seconds(60)) { batchWork.inFlight == 1 }
            let queued = Task { try await s.send(Sample.batch("pi-sync", seq: 1, readings: [Sample.heartRate(seq: 1)]), token: syncer) }
            try await eventually("a batch waits for the thread", within: .seconds(60)) { batchWork.inFlight == 2 }

            let refused = try await s.send(Sample.batch("pi-sync", seq: 2, readings: [Sample.heartRate(seq: 2)]), token: syncer)
            #expect(refused.status == 503, "\(refused.text)")
            #expect((refused.object["error"] as? [String: Any])?["code"] as? String == "unavailable")
            #expect(Int(refused.headers["retry-after"] ?? "") ?? 0 >= 1)

            let raised = Sample.alert("pi-alert", id: "sos-while-busy")
            let accepted = try await s.client.send("POST", "/v1/alerts", token: alerter, body: try WireCodec.encode(raised))
            #expect(accepted.status == 200, "\(accepted.text)")
            #expect(try await s.server.storedAlertUpdates().contains { $0.alert.id == "sos-while-busy" })
            #expect(batchWork.inFlight == 2, "the alert was taken in while the batch thread was still held")

            release.signal()
            try await holder.value
            let stored = try await queued.value
            #expect(stored.status == 200, "\(stored.text)")
            #expect(try await s.readings("pi-sync").count == 1, "the queued batch is stored; the refused one is not")
        }
    }
}
