import TrackMeCore

/// The digest a batch's idempotency key is checked against on replay (WIRE.md, "Store epochs
/// and conflicts"): SHA-256 over the readings as stored (`seq` and the reading's wire JSON, in
/// the batch's order) and `dropped_by_budget`. The heartbeat is left out: it describes the
/// device at the time of sending, and a resend may carry a newer one.
enum BatchDigest {
    static func digest(readings: [ReadingRow], droppedByBudget: Int64) -> String {
        var text = "v1\n\(droppedByBudget)\n"
        for reading in readings {
            text += "\(reading.sequence)\t\(reading.body)\n"
        }
        return ServerDigest.sha256Hex(text)
    }

    /// Whether a replayed key names other content than its first delivery, or another store's
    /// numbering. Rows stored before digests existed (no digest) are taken as they are, and a
    /// key first sent without an epoch (an agent that predates epochs, since upgraded) is a
    /// replay if the content is the same.
    static func conflicts(storedEpoch: String?, storedDigest: String?, batch: IncomingBatch) -> Bool {
        guard let storedDigest else { return false }
        if storedDigest != batch.digest { return true }
        if let storedEpoch, storedEpoch != batch.storeEpoch { return true }
        return false
    }
}
