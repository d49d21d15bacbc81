#if PostgreSQL
import PostgresNIO
import TrackMeCore

/// The statements every batch runs, prepared once per connection: PostgreSQL parses
/// and plans each once rather than on every request, on the machine that carries the database.

/// A bearer token's row (`Authenticator`: every request).
struct TokenLookup: PostgresPreparedStatement {
    static let sql = "SELECT secret_hash, role, device_id, expires_ms FROM tokens WHERE id = $1"
    static let bindingDataTypes: [PostgresDataType] = [.text]
    typealias Row = (String, String, String?, Int64?)

    var id: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(id)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// A group of batches inside its transaction, in one round trip (`trackme_ingest_group`,
/// PostgresIngestSchema), in the order given; one row per batch. NULLs in the arrays travel as
/// sentinels, because arrays of optionals do not bind.
struct IngestGroupCall: PostgresPreparedStatement {
    static let sql = """
        SELECT o_outcome, o_stored, o_duplicates, o_alerts, o_seq_floor, o_batch_floor, o_error, o_resolved, o_care_version, o_care_settings,
            o_news_error
        FROM trackme_ingest_group($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
        """
    static let bindingDataTypes: [PostgresDataType] = [
        .bool, .textArray, .int8Array, .int8Array, .textArray, .boolArray, .textArray, .textArray, .int8Array, .textArray,
        .int4Array, .int8Array, .textArray, .int8Array, .int8Array, .textArray, .textArray,
    ]
    typealias Row = (String, Int, Int, String, Int64?, Int64?, String?, [String]?, Int64?, String?, String?)

    var batches: [IncomingBatch]
    /// Take the feed lock first whatever the devices (a retry of batches that found it busy).
    var feedFirst: Bool

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 17)
        bindings.append(feedFirst)
        bindings.append(batches.map(\.deviceID))
        bindings.append(batches.map(\.batchSequence))
        bindings.append(batches.map(\.receivedMilliseconds))
        bindings.append(batches.map { $0.heartbeatJSON ?? "" })
        bindings.append(batches.map { $0.storeEpoch != nil })
        bindings.append(batches.map { $0.storeEpoch ?? "" })
        bindings.append(batches.map { $0.digest ?? "" })
        bindings.append(batches.map(\.droppedByBudget))
        bindings.append(
            try batches.map { try StoreJSON.encode(DeviceEventData(deviceID: $0.deviceID, lastSeenMilliseconds: $0.receivedMilliseconds)) }
        )
        bindings.append(batches.map { Int32($0.readings.count) })
        let readings = batches.flatMap(\.readings)
        bindings.append(readings.map(\.sequence))
        bindings.append(readings.map(\.kind.rawValue))
        bindings.append(readings.map(\.placedMilliseconds))
        bindings.append(readings.map { $0.wallMilliseconds ?? Int64.min })
        bindings.append(readings.map { $0.timeFlag?.rawValue ?? "" })
        bindings.append(readings.map(\.body))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}
#endif
