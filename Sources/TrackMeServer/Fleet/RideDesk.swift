import TrackMeCore

/// Performs `RideDispatch` on the fleet store: books rides, moves open rides on (lapsed offers,
/// new offers), applies drivers' answers and says what a taxi is to hear in its batch reply.
/// There is no timer: every booking, answer, board read and taxi batch moves the open rides on
/// first, and taxis batch about every second (`DeviceProfile.heartbeatInterval`), so a lapsed
/// offer is passed on within a second or so of lapsing. Saves name the version they replace, so
/// instances sharing one PostgreSQL cannot both move a ride; the loser reads again.
actor RideDesk {
    private let store: any FleetStore
    private let policy: RideDispatch
    private let wallClock: @Sendable () -> Int64

    init(store: any FleetStore, settings: RideDispatch.Settings, wallClock: @escaping @Sendable () -> Int64) {
        self.store = store
        policy = RideDispatch(settings: settings)
        self.wallClock = wallClock
    }

    var settings: RideDispatch.Settings { policy.settings }

    /// Books a ride and offers it at once when it is due and a taxi is free.
    func book(zoneID: String, pickup: String?, reservedMilliseconds: Int64?) async throws -> Ride {
        let ride = Ride(
            id: BearerToken.generate().id,
            zoneID: zoneID,
            pickup: pickup,
            reservedMilliseconds: reservedMilliseconds,
            createdMilliseconds: wallClock()
        )
        try await store.insertRide(ride)
        try await advance()
        return try await store.ride(id: ride.id) ?? ride
    }

    /// Moves every open ride on at the current wall time; returns the rides still open after
    /// it, as this pass left them (what a batch's reply is told from, without reading them again).
    @discardableResult
    func advance() async throws -> [Ride] {
        let now = wallClock()
        var open = try await store.openRides()
        guard !open.isEmpty else { return [] }
        var taxis = try await store.fleetTaxis()
        var queues: [String: [FleetTaxi]] = [:]
        for index in open.indices {
            let zoneID = open[index].zoneID
            if queues[zoneID] == nil { queues[zoneID] = FleetQueue.queue(zoneID: zoneID, taxis: taxis, now: now) }
            let before = open[index]
            let actions = policy.advance(&open[index], queue: queues[zoneID] ?? [], busy: RideDispatch.busy(open), now: now)
            guard open[index] != before else { continue }
            if try await store.saveRide(open[index], replacing: before.version, actions: actions, now: now) {
                // The requeued taxi is at the back for the next ride of this pass too.
                for case .requeue(let deviceID) in actions {
                    taxis = taxis.map { requeued($0, deviceID, now) }
                    queues[zoneID] = FleetQueue.queue(zoneID: zoneID, taxis: taxis, now: now)
                }
            } else {
                open[index] = try await store.ride(id: before.id) ?? before
            }
        }
        return open.filter(\.state.isOpen)
    }

    /// A driver's answer; throws `RideDispatch.Refusal` (changing nothing) or the store's error.
    func answer(_ answer: RideAnswer, deviceID: String) async throws -> Ride {
        try await advance()
        for _ in 0..<3 {
            guard let rideID = Ride.rideID(ofOffer: answer.offerID), var ride = try await store.ride(id: rideID) else {
                throw RideDispatch.Refusal(code: .noOffer, message: "no offer \(answer.offerID)")
            }
            let version = ride.version
            let now = wallClock()
            let actions = try policy.answer(&ride, offerID: answer.offerID, deviceID: deviceID, event: answer.event, now: now)
            if try await store.saveRide(ride, replacing: version, actions: actions, now: now) {
                // A refused ride goes to the next taxi now, not with the next batch.
                if answer.event == .refuse { try await advance() }
                return try await store.ride(id: ride.id) ?? ride
            }
        }
        throw RideDispatch.Refusal(code: .offerClosed, message: "the ride changed while the answer was applied; ask again")
    }

    /// What the taxi `deviceID` hears of its ride in a batch reply: the live offer, or the ride
    /// it accepted; nil when none.
    func notice(for deviceID: String) async throws -> RideNotice? {
        let open = try await advance()
        let now = wallClock()
        guard let ride = open.first(where: { policy.notice($0, deviceID: deviceID, zoneName: "", now: now) != nil }) else { return nil }
        let zoneName = try await store.zones().first { $0.id == ride.zoneID }?.name ?? ride.zoneID
        return policy.notice(ride, deviceID: deviceID, zoneName: zoneName, now: now)
    }

    /// A page of the rides for the fleet page: open ones and those ended in the last `hours`,
    /// newest first, past `after`, at most `limit`.
    func rides(after: (createdMilliseconds: Int64, id: String)?, limit: Int, hours: Int64 = 12) async throws -> [Ride] {
        try await advance()
        return try await store.rides(endedSince: wallClock() - hours * 3_600_000, after: after, limit: limit)
    }

    private func requeued(_ taxi: FleetTaxi, _ deviceID: String, _ now: Int64) -> FleetTaxi {
        guard taxi.deviceID == deviceID, taxi.queuedMilliseconds != nil else { return taxi }
        var moved = taxi
        moved.queuedMilliseconds = now
        return moved
    }
}
