// Data path, step 6 (benchmarks and checks of steps 4-5): store benchmarks against a baseline, synthetic readings, the exactly-once check.

public import TrackMeCore

/// The one comparison behind "every reading the store acknowledged is at the server exactly
/// once": what a device's store holds against what a server holds for that device, reading by
/// reading (sequence number and content). The tests of the store-and-sync crash child (against
/// the real server in-process) and of the real `trackme-agent` binary (against the real
/// `trackme-server` binary) both ask it.
public enum ExactlyOnce {
    /// Everything that is wrong, worst first, each as one line; empty when the server holds
    /// exactly the store's readings, each once and unchanged, and the store has them all
    /// marked synced. At most `limit` lines name single readings.
    public static func problems(
        store local: [(reading: WireReading, synced: Bool)],
        server remote: [WireReading],
        limit: Int = 5
    ) -> [String] {
        var problems: [String] = []
        let unsynced = local.filter { !$0.synced }.count
        if unsynced > 0 { problems.append("\(unsynced) readings left unsynced in the store") }
        var atServer: [Int64: WireReading] = [:]
        var twice: [Int64] = []
        for reading in remote {
            if atServer.updateValue(reading, forKey: reading.sequence) != nil { twice.append(reading.sequence) }
        }
        if !twice.isEmpty { problems.append("\(twice.count) readings at the server more than once, first seq \(twice[0])") }
        var missing: [Int64] = []
        var differing: [Int64] = []
        for (reading, _) in local {
            switch atServer.removeValue(forKey: reading.sequence) {
            case nil: missing.append(reading.sequence)
            case let stored? where stored != reading: differing.append(reading.sequence)
            case .some: break
            }
        }
        if !missing.isEmpty {
            problems.append(
                "\(missing.count) readings of the store missing at the server: \(missing.prefix(limit).map(String.init).joined(separator: ", "))"
            )
        }
        if !differing.isEmpty {
            problems.append(
                "\(differing.count) readings differ between the store and the server: \(differing.prefix(limit).map(String.init).joined(separator: ", "))"
            )
        }
        if !atServer.isEmpty {
            let extra = atServer.keys.sorted().prefix(limit).map(String.init).joined(separator: ", ")
            problems.append("\(atServer.count) readings at the server that the store does not hold: \(extra)")
        }
        return problems
    }
}
