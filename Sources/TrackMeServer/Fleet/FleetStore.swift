/// What the fleet room may do to the database, and nothing more: zones, the taxis as their
/// reports left them, the booking system's tokens, and rides. Both implementations
/// (`SQLiteFleetStore`, `PostgresFleetStore`) give the same answers; `FleetStoreContractTests`
/// runs the same cases on each.
protocol FleetStore: Sendable {
    func insertZone(_ zone: FleetZone) async throws
    func zones() async throws -> [FleetZone]
    func fleetTaxis() async throws -> [FleetTaxi]
    /// A bearer token of role `fleet_operator` for a booking system.
    func insertOperatorToken(_ token: StoredToken, createdMilliseconds: Int64) async throws

    func insertRide(_ ride: Ride) async throws
    func ride(id: String) async throws -> Ride?
    /// Rides not ended (waiting, offered, accepted, on ride), oldest first.
    func openRides() async throws -> [Ride]
    /// One page of the open rides and those ended at or after `endedSince`: newest first, the id
    /// (descending) breaking ties, past `after` (the creation time and id of the previous page's
    /// last ride), at most `limit`.
    func rides(endedSince: Int64, after: (createdMilliseconds: Int64, id: String)?, limit: Int) async throws -> [Ride]
    /// Saves `ride` if the stored one is still at `replacing` (its version before the change),
    /// and in the same transaction performs `actions` on the taxis at `now`: a requeued taxi
    /// that is still queued goes to the back of its zone's queue; a taxi on a ride leaves every
    /// queue. False, changing nothing, when another writer moved the ride first.
    func saveRide(_ ride: Ride, replacing version: Int64, actions: [RideDispatch.Action], now: Int64) async throws -> Bool
}
