import BlueZHeartRate
import EdgeDispatch
import EdgeStore
public import Foundation
import Logging
import Synchronization
import TrackMeAgent
public import TrackMeCore

/// `trackme-sim bench sos-latency`: the time from a critical reading's bytes being handed to the
/// decoder to its alert being journaled (fsynced) and queued on the dispatch lane, through the
/// agent's own `AgentPipeline`, `ReadingStore` and `DispatchLane`, on the monotonic clock.
///
/// Each sample is a fresh pipeline fed a flat line (0 bpm with contact) one reading a second
/// until the no-pulse rule raises; the reading that raises is the sample. The baseline, measured
/// in the same run on the same readings, is decode and rules alone (no journal, no dispatch):
/// the ratio says what durability and hand-off cost on this machine's disk.
///
/// The lane runs, as on a device, against a server that accepts at once, and each sample's alert
/// is cancelled and the cancellation delivered before the next sample starts: a device's year
/// of alerts is a year of alerts that went out and closed, so the figure at 100,000 samples says
/// whether the decision path costs more after many alerts (it must not).
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

    /// A server that accepts every update at once. The measurement stops when the raise is
    /// queued on the lane, before this is reached.
    struct AcceptingTransport: AlertTransport {
        func send(_ update: AlertUpdate) async throws {}
    }

    final class FirstAlertTime: Sendable {
        let end = Mutex<ContinuousClock.Instant?>(nil)
    }

    public static func run(samples: Int, directory: URL, settings: SOSSettings = SOSSettings()) async throws -> Result {
        let logger = Logger(label: "trackme.bench.sos", factory: { _ in SwiftLogNoOpLogHandler() })
        // A budget the run never reaches: every reading here lies within an alert's window, which
        // eviction keeps, so at the default budget a long run would measure eviction scanning a
        // store it cannot shrink (`bench store` measures eviction), not the decision path.
        let store = try ReadingStore(
            configuration: StoreConfiguration(
                path: directory.appendingPathComponent("sos-latency.sqlite").path,
                diskBudgetBytes: 1 << 32
            ),
            logger: logger
        )
        defer { store.close() }
        let committer = GroupCommitter(store: store, clock: ContinuousClock(), interval: .seconds(3600))
        let lane = DispatchLane(
            transport: AcceptingTransport(),
            fallback: nil,
            clock: ContinuousClock(),
            timestamp: { ScenarioRunner.timestamp(0) },
            logger: logger
        )
        let laneTask = Task { await lane.run() }
        defer { laneTask.cancel() }
        var laneEvents = lane.events.makeAsyncIterator()
        let profile = PersonProfile(name: "Bench", age: 70)
        let flat = HeartRateMeasurement.encode(HeartRateReading(bpm: 0, contact: .detected))
        let firstAlert = FirstAlertTime()

        var latencies: [Double] = []
        var baseline: [Double] = []
        latencies.reserveCapacity(samples)
        for sample in 0..<samples {
            // Each sample in its own stretch of monotonic time, so the journal sees distinct alerts.
            let origin = Int64(sample) * 100_000
            let pipeline = AgentPipeline(
                configuration: .init(deviceID: "bench", profile: profile, settings: settings),
                store: store,
                committer: committer,
                ids: SequentialAlertIDs(prefix: "bench-\(sample)"),
                now: ScenarioRunner.timestamp(origin),
                dispatch: { action in
                    await lane.submit(action)
                    let now = ContinuousClock.now
                    firstAlert.end.withLock { $0 = now }
                },
                logger: logger
            )
            var second: Int64 = 0
            while second < 30 {
                firstAlert.end.withLock { $0 = nil }
                let start = ContinuousClock.now
                let actions = await pipeline.heartRateNotification(flat, at: ScenarioRunner.timestamp(origin + second * 1000))
                if actions.contains(where: { if case .raise = $0 { true } else { false } }), let end = firstAlert.end.withLock({ $0 }) {
                    latencies.append(ScenarioRunner.milliseconds(end - start))
                    break
                }
                second += 1
            }
            if second == 30 { throw ScenarioError(message: "sample \(sample): the flat line never raised an alert") }
            // The wearer says it was a false alarm; wait until the lane has delivered that, so the
            // alert is closed everywhere before the next sample.
            _ = await pipeline.receive(.cancel(.falseAlarm), at: ScenarioRunner.timestamp(origin + (second + 1) * 1000))
            var closed = false
            while !closed, let event = await laneEvents.next() {
                if case .sent(let update) = event, update.type == .cancelled { closed = true }
            }
            if !closed { throw ScenarioError(message: "sample \(sample): the lane never delivered the cancellation") }
            committer.flush()

            // Baseline: the same readings through decode and rules only.
            var engine = SOSEngine(
                deviceID: "bench",
                profile: profile,
                settings: settings,
                ids: SequentialAlertIDs(prefix: "base-\(sample)"),
                now: ScenarioRunner.timestamp(origin)
            )
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
            samples: sorted.count,
            p50Milliseconds: p50,
            p99Milliseconds: percentile(sorted, 0.99),
            maxMilliseconds: sorted.last ?? 0,
            budgetMilliseconds: 500,
            baselineP50Milliseconds: baseP50,
            baselineP99Milliseconds: percentile(base, 0.99),
            ratio: baseP50 > 0 ? p50 / baseP50 : 0,
            baseline: "decode + SOS rules only, same readings, no journal or dispatch"
        )
    }
}
