import Foundation
import Testing
import TrackMeCore

@testable import TrackMeServer

/// The fleet room's store, held to one contract on every backend: the same cases, run on
/// SQLite and on PostgreSQL, against the store itself (no HTTP in between).
@Suite("FleetStore contract")
struct FleetStoreContractTests {
    static let start: Int64 = 1_795_000_000_000

    /// A freshly migrated database of `backend` (the one intake's contract opens), the fleet's
    /// store over it, one zone (`z1`) and two taxis queued in it (`taxi-a` first, then `taxi-b`)
    /// and one not queued.
    static func withStores(_ backend: Backend, _ body: (any ServerStore, any FleetStore) async throws -> Void) async throws {
        try await IngestStoreContractTests.withStores(backend) { hall, _ in
            let fleet = try TrackMeServer.fleetStore(hall)
            try await fleet.insertZone(
                FleetZone(id: "z1", name: "Centre", polygon: [[45, 7], [45, 7.01], [45.01, 7.01]], createdMilliseconds: start)
            )
            try await hall.saveFleetTaxi(taxi("taxi-a", queued: start + 1))
            try await hall.saveFleetTaxi(taxi("taxi-b", queued: start + 2))
            try await hall.saveFleetTaxi(taxi("taxi-c", queued: nil, state: "unavailable"))
            try await body(hall, fleet)
        }
    }

    static func taxi(_ id: String, queued: Int64?, state: String = "available") -> FleetTaxi {
        FleetTaxi(deviceID: id, name: "Cab \(id)", state: state, zoneID: "z1", queuedMilliseconds: queued, lastReportMilliseconds: start)
    }

    static func ride(_ id: String, created: Int64 = start) -> Ride {
        Ride(id: id, zoneID: "z1", pickup: "Piazza Castello 1", reservedMilliseconds: nil, createdMilliseconds: created)
    }

    @Test("a ride reads back as stored, open until it ends", arguments: Backend.enabled)
    func rideRoundTrip(backend: Backend) async throws {
        try await Self.withStores(backend) { _, fleet in
            var ride = Self.ride("r1")
            ride.reservedMilliseconds = Self.start + 3_600_000
            try await fleet.insertRide(ride)
            #expect(try await fleet.ride(id: "r1") == ride)
            #expect(try await fleet.ride(id: "r-none") == nil)
            #expect(try await fleet.openRides().map(\.id) == ["r1"])

            var ended = ride
            ended.state = .completed
            ended.endedMilliseconds = Self.start + 10_000
            ended.version = 1
            #expect(try await fleet.saveRide(ended, replacing: 0, actions: [], now: Self.start + 10_000))
            #expect(try await fleet.ride(id: "r1") == ended)
            #expect(try await fleet.openRides().isEmpty)
            #expect(try await fleet.rides(endedSince: Self.start, after: nil, limit: 10).map(\.id) == ["r1"])
            #expect(try await fleet.rides(endedSince: Self.start + 20_000, after: nil, limit: 10).isEmpty)
        }
    }

    @Test("a save naming a version another writer replaced changes nothing, taxis included", arguments: Backend.enabled)
    func staleSave(backend: Backend) async throws {
        try await Self.withStores(backend) { hall, fleet in
            try await fleet.insertRide(Self.ride("r1"))
            var first = Self.ride("r1")
            first.state = .offered
            first.version = 1
            #expect(try await fleet.saveRide(first, replacing: 0, actions: [], now: Self.start))
            var late = Self.ride("r1")
            late.state = .missingClient
            late.version = 1
            #expect(try await fleet.saveRide(late, replacing: 0, actions: [.onRide(deviceID: "taxi-a")], now: Self.start) == false)
            #expect(try await fleet.ride(id: "r1") == first)
            #expect(try await hall.fleetTaxi(deviceID: "taxi-a") == Self.taxi("taxi-a", queued: Self.start + 1))
        }
    }

    @Test("a refusing taxi goes to the back of the queue; an accepting one leaves it for its ride", arguments: Backend.enabled)
    func taxiActions(backend: Backend) async throws {
        try await Self.withStores(backend) { hall, fleet in
            try await fleet.insertRide(Self.ride("r1"))
            var ride = Self.ride("r1")
            ride.version = 1
            let later = Self.start + 60_000
            #expect(try await fleet.saveRide(ride, replacing: 0, actions: [.requeue(deviceID: "taxi-a"), .requeue(deviceID: "taxi-c")], now: later))
            #expect(try await hall.fleetTaxi(deviceID: "taxi-a")?.queuedMilliseconds == later)
            // A taxi that is not queued is not put in a queue.
            #expect(try await hall.fleetTaxi(deviceID: "taxi-c")?.queuedMilliseconds == nil)
            let queue = FleetQueue.queue(zoneID: "z1", taxis: try await fleet.fleetTaxis(), now: later)
            #expect(queue.map(\.deviceID) == ["taxi-b", "taxi-a"])

            ride.version = 2
            #expect(try await fleet.saveRide(ride, replacing: 1, actions: [.onRide(deviceID: "taxi-b")], now: later))
            let taxiB = try #require(try await hall.fleetTaxi(deviceID: "taxi-b"))
            #expect(taxiB.state == "on_ride" && taxiB.queuedMilliseconds == nil)
            #expect(FleetQueue.queue(zoneID: "z1", taxis: try await fleet.fleetTaxis(), now: later).map(\.deviceID) == ["taxi-a"])
        }
    }

    @Test("the page's list: open rides and those ended since, newest first, bounded", arguments: Backend.enabled)
    func pageList(backend: Backend) async throws {
        try await Self.withStores(backend) { _, fleet in
            for index in 0..<5 { try await fleet.insertRide(Self.ride("r\(index)", created: Self.start + Int64(index) * 1000)) }
            var old = Self.ride("r0")
            old.state = .completed
            old.endedMilliseconds = Self.start + 5_000
            old.version = 1
            #expect(try await fleet.saveRide(old, replacing: 0, actions: [], now: Self.start + 5_000))
            #expect(try await fleet.rides(endedSince: Self.start + 6_000, after: nil, limit: 10).map(\.id) == ["r4", "r3", "r2", "r1"])
            #expect(try await fleet.rides(endedSince: Self.start, after: nil, limit: 3).map(\.id) == ["r4", "r3", "r2"])
            #expect(try await fleet.openRides().map(\.id) == ["r1", "r2", "r3", "r4"])
        }
    }
}
