#if PostgreSQL
import PostgresNIO
import TrackMeCore

/// The statements every batch runs, prepared once per connection (issue 22): PostgreSQL parses
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

/// One batch inside its group's transaction (`trackme_ingest_batch`, PostgresIngestSchema).
/// NULLs in the arrays travel as sentinels, because arrays of optionals do not bind.
struct IngestBatchCall: PostgresPreparedStatement {
    static let sql = """
        SELECT o_outcome, o_stored, o_duplicates, o_alerts, o_seq_floor, o_batch_floor, o_error
        FROM trackme_ingest_batch($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
        """
    static let bindingDataTypes: [PostgresDataType] = [
        .text, .int8, .int8, .text, .text, .text, .int8, .int8Array, .textArray, .int8Array, .int8Array, .textArray, .textArray, .text,
        .bool,
    ]
    typealias Row = (String, Int, Int, String, Int64?, Int64?, String?)

    var batch: IncomingBatch
    /// The feed event's data should the device be back from silence.
    var returned: String
    var feedLocked: Bool

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 15)
        bindings.append(batch.deviceID)
        bindings.append(batch.batchSequence)
        bindings.append(batch.receivedMilliseconds)
        bindings.append(batch.heartbeatJSON)
        bindings.append(batch.storeEpoch)
        bindings.append(batch.digest)
        bindings.append(batch.droppedByBudget)
        bindings.append(batch.readings.map(\.sequence))
        bindings.append(batch.readings.map(\.kind.rawValue))
        bindings.append(batch.readings.map(\.placedMilliseconds))
        bindings.append(batch.readings.map { $0.wallMilliseconds ?? Int64.min })
        bindings.append(batch.readings.map { $0.timeFlag?.rawValue ?? "" })
        bindings.append(batch.readings.map(\.body))
        bindings.append(returned)
        bindings.append(feedLocked)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}
#endif
