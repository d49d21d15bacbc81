extension TrackMeServer {
    /// Every reading sequence number the store holds for a device, in order, one entry per
    /// stored row: the simulation compares it with what the device acknowledged.
    public func storedSequences(deviceID: String) async throws -> [Int64] {
        var result: [Int64] = []
        var after: Int64 = Int64.min
        while true {
            let page = try await store.readings(
                ReadingQuery(deviceID: deviceID, fromMilliseconds: nil, toMilliseconds: nil, kind: nil, afterSequence: after, limit: 1000))
            guard let last = page.last else { return result }
            result += page.map(\.sequence)
            after = last.sequence
        }
    }
}
