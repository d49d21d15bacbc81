import BlueZHeartRate
import EdgeDispatch
import EdgeStore
public import Foundation
import Logging
import Synchronization
import TrackMeAgent
import TrackMeCore

/// `trackme-sim bench sos-latency`: the time from a critical reading's bytes being handed to the
/// decoder to its alert being journaled (fsynced) and queued on the dispatch lane, through the
/// agent's own `AgentPipeline`, `ReadingStore` and `DispatchLane`, on the monotonic clock.
///
/// Each sample is a fresh pipeline fed a flat line (0 bpm with contact) one reading a second
/// until the no-pulse rule raises; the reading that raises is the sample. The baseline, measured
/// in the same run on the same readings, is decode and rules alone (no journal, no dispatch):
/// the ratio says what durability and hand-off cost on this machine's disk.
public enum SOSLatencyBenchmark {
    public struct Result: Codable, Sendable {
        public var samples: Int
        public var p50Milliseconds: Double
        public var p99Milliseconds: Double
        public var maxMilliseconds: Double
        public var budgetMilliseconds: Double
        public var baselineP50Milliseconds: Double
        public var baselineP99Milliseconds: Double
        /// p50 / baseline p50.
        public var ratio: Double
        public var baseline: String

        enum CodingKeys: String, CodingKey {
            case samples
            case p50Milliseconds = "p50_ms"
            case p99Milliseconds = "p99_ms"
            case maxMilliseconds = "max_ms"
            case budgetMilliseconds = "budget_ms"
            case baselineP50Milliseconds = "baseline_p50_ms"
            case baselineP99Milliseconds = "baseline_p99_ms"
            case ratio, baseline
        }
    }

    /// A transport that is never reached: the lane is not running, so submitted alerts wait in
    /// its queue, which is the point the measurement stops at.
    struct UnusedTransport: AlertTransport {
        func send(_ update: AlertUpdate) async throws -> AlertReceipt { AlertReceipt() }
    }

    final class Stopwatch: Sendable {
        let end = Mutex<ContinuousClock.Instant?>(nil)
    }

    public static func run(samples: Int, directory: URL) async throws -> Result {
        let logger = Logger(label: "trackme.bench.sos", factory: { _ in SwiftLogNoOpLogHandler() })
        let store = try ReadingStore(
            configuration: StoreConfiguration(path: directory.appendingPathComponent("sos-latency.sqlite").path), logger: logger)
        defer { store.close() }
        let committer = GroupCommitter(store: store, clock: ContinuousClock(), interval: .seconds(3600))
        let lane = DispatchLane(
            transport: UnusedTransport(), fallback: nil, clock: ContinuousClock(),
            timestamp: { ScenarioRunner.timestamp(0) }, logger: logger)
        let profile = PersonProfile(name: "Bench", age: 70)
        let flat = HeartRateMeasurement.encode(HeartRateReading(bpm: 0, contact: .detected))
        let stopwatch = Stopwatch()

        var latencies: [Double] = []
        var baseline: [Double] = []
        latencies.reserveCapacity(samples)
        for sample in 0..<samples {
            // Each sample in its own stretch of monotonic time, so the journal sees distinct alerts.
            let origin = Int64(sample) * 100_000
            let pipeline = AgentPipeline(
                configuration: .init(deviceID: "bench", profile: profile), store: store, committer: committer,
                ids: SequentialAlertIDs(prefix: "bench-\(sample)"), now: ScenarioRunner.timestamp(origin),
                dispatch: { action in
                    await lane.submit(action)
                    let now = ContinuousClock.now
                    stopwatch.end.withLock { $0 = now }
                }, logger: logger)
            var second: Int64 = 0
            while second < 30 {
                stopwatch.end.withLock { $0 = nil }
                let start = ContinuousClock.now
                let actions = await pipeline.heartRateNotification(flat, at: ScenarioRunner.timestamp(origin + second * 1000))
                if actions.contains(where: { if case .raise = $0 { true } else { false } }), let end = stopwatch.end.withLock({ $0 }) {
                    latencies.append(ScenarioRunner.milliseconds(end - start))
                    break
                }
                second += 1
            }
            if second == 30 { throw ScenarioError(message: "sample \(sample): the flat line never raised an alert") }
            await committer.flush()

            // Baseline: the same readings through decode and rules only.
            var engine = SOSEngine(deviceID: "bench", profile: profile, ids: SequentialAlertIDs(prefix: "base-\(sample)"), now: ScenarioRunner.timestamp(origin))
            for s in 0...second {
                let start = ContinuousClock.now
                guard let reading = try? HeartRateMeasurement.decode(flat) else { continue }
                let actions = engine.receive(.heartRate(reading), now: ScenarioRunner.timestamp(origin + s * 1000))
                if s == second {
                    let elapsed = ScenarioRunner.milliseconds(ContinuousClock.now - start)
                    guard actions.contains(where: { if case .raise = $0 { true } else { false } }) else {
                        throw ScenarioError(message: "sample \(sample): the bare rules did not raise on the same reading")
                    }
                    baseline.append(elapsed)
                }
            }
        }
        let sorted = latencies.sorted()
        let base = baseline.sorted()
        func percentile(_ values: [Double], _ p: Double) -> Double {
            guard !values.isEmpty else { return 0 }
            return values[min(values.count - 1, Int((Double(values.count) * p).rounded(.up)) - 1)]
        }
        let p50 = percentile(sorted, 0.5)
        let baseP50 = percentile(base, 0.5)
        return Result(
            samples: sorted.count, p50Milliseconds: p50, p99Milliseconds: percentile(sorted, 0.99), maxMilliseconds: sorted.last ?? 0,
            budgetMilliseconds: 500, baselineP50Milliseconds: baseP50, baselineP99Milliseconds: percentile(base, 0.99),
            ratio: baseP50 > 0 ? p50 / baseP50 : 0, baseline: "decode + SOS rules only, same readings, no journal or dispatch")
    }
}
