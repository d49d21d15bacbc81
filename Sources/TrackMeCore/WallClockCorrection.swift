/// Corrects wall times stamped while the clock was untrusted, once a trusted time of the same
/// boot is known.
///
/// A Pi without a real-time clock starts at 1970 or at the last shutdown's time (fake-hwclock)
/// until NTP, or gpsd feeding chrony, synchronises it. Its monotonic clock (`CLOCK_BOOTTIME`)
/// is right about intervals within a boot all along, so one trusted timestamp of a boot gives
/// that boot's offset (wall ms minus monotonic ms), and every reading of the boot gets
/// `monotonic + offset` as its wall time, flagged `wallClockCorrected`. Readings of a boot that
/// never saw a trusted time stay as they were (the server files them by arrival and flags them).
///
/// A batch must carry the same readings every time it is sent (the server checks a replayed
/// key's digest and answers 409 to other content), so an anchor applies only from the first
/// batch sent after it was learned (`fromBatch`): a batch that went out uncorrected is resent
/// uncorrected, however the anchors changed in between.
///
/// Pure; `Codable` so the agent keeps the anchors across its own restarts.
public struct WallClockCorrection: Hashable, Sendable, Codable {
    public struct Anchor: Hashable, Sendable, Codable {
        public var bootID: String
        /// Wall milliseconds minus monotonic milliseconds.
        public var offsetMilliseconds: Int64
        /// The first batch sequence number it applies to; nil until a batch is sent after it
        /// was learned.
        public var fromBatch: Int64?
    }

    /// Anchors in the order they were learned (a clock step adds a new one for the same boot).
    public private(set) var anchors: [Anchor] = []
    /// The highest batch sequence number sent so far (or in flight at start).
    public private(set) var highestBatchSent: Int64 = 0
    public static let maximumAnchors = 16
    /// An offset that moves by more than this (the clock was stepped) is a new anchor; smaller
    /// moves (NTP slewing, scheduling jitter) are not, so a steady clock learns once per boot.
    public static let stepMilliseconds: Int64 = 1000

    public init() {}

    /// The latest offset known for `bootID`.
    public func offset(bootID: String) -> Int64? {
        anchors.last { $0.bootID == bootID }?.offsetMilliseconds
    }

    /// Learns from a timestamp taken while the wall clock was trusted; returns whether what is
    /// known changed (a first anchor for the boot, or a step).
    @discardableResult
    public mutating func learn(_ timestamp: ReadingTimestamp) -> Bool {
        guard timestamp.wallClockTrusted, !timestamp.wallClockCorrected, let wall = timestamp.wallClockMilliseconds else { return false }
        let offset = wall - Int64(timestamp.monotonicNanoseconds / 1_000_000)
        if let known = self.offset(bootID: timestamp.bootID), abs(known - offset) <= Self.stepMilliseconds { return false }
        anchors.append(Anchor(bootID: timestamp.bootID, offsetMilliseconds: offset, fromBatch: nil))
        if anchors.count > Self.maximumAnchors { anchors.removeFirst(anchors.count - Self.maximumAnchors) }
        return true
    }

    /// Batches up to `batchSequence` may already have been sent (the in-flight batches found at
    /// start): anchors not yet in force apply only after them.
    public mutating func noteSent(upTo batchSequence: Int64) {
        highestBatchSent = max(highestBatchSent, batchSequence)
    }

    /// The readings of batch `batchSequence` as they are to be sent: an untrusted wall time is
    /// corrected with the latest anchor of its boot in force for this batch. Anchors learned
    /// since the last batch come into force with the first batch above every one sent before.
    public mutating func corrected(_ readings: [WireReading], batchSequence: Int64) -> [WireReading] {
        for index in anchors.indices where anchors[index].fromBatch == nil {
            anchors[index].fromBatch = highestBatchSent + 1
        }
        highestBatchSent = max(highestBatchSent, batchSequence)
        guard anchors.contains(where: { ($0.fromBatch ?? .max) <= batchSequence }) else { return readings }
        return readings.map { reading in
            guard !reading.timestamp.wallClockTrusted,
                let anchor = anchors.last(where: { $0.bootID == reading.timestamp.bootID && ($0.fromBatch ?? .max) <= batchSequence })
            else { return reading }
            var fixed = reading
            fixed.timestamp = Self.corrected(reading.timestamp, offset: anchor.offsetMilliseconds)
            return fixed
        }
    }

    /// `timestamp` with its wall time corrected by the latest offset of its boot, if it was
    /// untrusted and an offset is known; otherwise unchanged.
    public func corrected(_ timestamp: ReadingTimestamp) -> ReadingTimestamp {
        guard !timestamp.wallClockTrusted, let offset = offset(bootID: timestamp.bootID) else { return timestamp }
        return Self.corrected(timestamp, offset: offset)
    }

    static func corrected(_ timestamp: ReadingTimestamp, offset: Int64) -> ReadingTimestamp {
        var fixed = timestamp
        fixed.wallClockMilliseconds = Int64(timestamp.monotonicNanoseconds / 1_000_000) + offset
        fixed.wallClockTrusted = true
        fixed.wallClockCorrected = true
        return fixed
    }
}
