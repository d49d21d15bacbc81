import Foundation
import TrackMeAgent
import TrackMeCore

/// A population: many wearers on one server for as long as the scenario says, each device built
/// by the agent's composition root and stepped one trace second at a time, every reading through
/// its rules, store and readings lane. What it must show: every committed reading at the server
/// once, every held episode's alert on the dispatcher's board within the scenario's limit, and no
/// alert from anyone else.
extension CrowdRunner {
    struct Wearer {
        var device: CrowdDevice
        /// The strap's notifications by run second: the normal recording's (from the wearer's own
        /// point in it) or, from its start, the episode's.
        var offset: Int
        var episode: (start: Int, onset: Int, strap: [Int: [HeartRateReading]], end: Int)?
    }

    /// A recording's notifications by second (each in the second it falls in, rounded up as the
    /// strap sends it).
    static func bySecond(_ trace: HeartRateTrace) -> [Int: [HeartRateReading]] {
        var seconds: [Int: [HeartRateReading]] = [:]
        for row in trace.rows { seconds[Int((row.timeMilliseconds + 999) / 1000), default: []].append(row.reading) }
        return seconds
    }

    /// A recording named relative to the scenario file (or absolute); `field` names it in an error.
    func loadTrace(_ path: String, field: String) throws -> HeartRateTrace {
        let directory = options.scenarioDirectory ?? options.simulationsDirectory.appendingPathComponent("scenarios")
        let url = path.hasPrefix("/") ? URL(fileURLWithPath: path) : directory.appendingPathComponent(path)
        let text: String
        do { text = try String(contentsOf: url, encoding: .utf8) } catch {
            throw ScenarioError(message: "\(field) \(url.path): \(error.localizedDescription)")
        }
        do { return try HeartRateTrace(csv: text) } catch { throw ScenarioError(message: "\(path): \(error)") }
    }

    func runPopulation(_ population: CrowdScenario.Population, scenario: CrowdScenario, context: Context, into outcome: inout Outcome) async throws {
        let count = options.runners ?? population.wearers
        let duration = options.durationSeconds ?? population.durationSeconds
        let normal = Self.bySecond(try loadTrace(population.trace, field: "crowd.population.trace"))
        guard let period = normal.keys.max().map({ $0 + 1 }), period > 0 else {
            throw ScenarioError(message: "\(population.trace) holds no heart-rate rows")
        }
        var random = SplitMix64(seed: scenario.seed ?? 35)
        var wearers: [Wearer] = []
        for index in 0..<count {
            let id = String(format: "wearer-%04d", index + 1)
            let device = try await context.device(
                id,
                person: PersonProfile(name: String(format: "Wearer %04d", index + 1), age: 25 + index % 50),
                profile: .wearer,
                seed: UInt64(index + 1),
                wearsStrap: true
            )
            wearers.append(Wearer(device: device, offset: Int(random.next() % UInt64(period))))
        }
        for episode in population.episodes ?? [] {
            guard wearers.indices.contains(episode.wearer - 1) else {
                throw ScenarioError(message: "episode wearer \(episode.wearer) is not one of the \(count) wearers")
            }
            let strap = Self.bySecond(try loadTrace(episode.trace, field: "crowd.population.episodes.trace"))
            wearers[episode.wearer - 1].episode = (episode.startSeconds, episode.onsetSeconds, strap, strap.keys.max() ?? 0)
        }
        // An episode whose condition begins after the run ends is not expected to raise anything.
        let withEpisode = Set((population.episodes ?? []).filter { $0.startSeconds + $0.onsetSeconds <= duration }.map { $0.wearer - 1 })

        var readings = 0
        let started = ContinuousClock.now
        for second in 0...duration {
            let ms = try await context.enter(second)
            let snapshot = wearers
            readings += await withTaskGroup(of: Int.self) { group in
                var next = 0
                func add(_ i: Int) {
                    let wearer = snapshot[i]
                    group.addTask {
                        let strap: [HeartRateReading]
                        if let episode = wearer.episode, second >= episode.start {
                            strap = episode.strap[second - episode.start] ?? []
                        } else {
                            strap = normal[(second + wearer.offset) % period] ?? []
                        }
                        for reading in strap { await wearer.device.heartRate(reading, at: ms) }
                        await wearer.device.commit()
                        await wearer.device.syncStep(at: ms)
                        return strap.count
                    }
                }
                while next < min(options.concurrency, snapshot.count) {
                    add(next)
                    next += 1
                }
                var total = 0
                for await count in group {
                    total += count
                    if next < snapshot.count {
                        add(next)
                        next += 1
                    }
                }
                return total
            }
        }
        let elapsed = ScenarioRunner.milliseconds(ContinuousClock.now - started) / 1000
        context.wall.set(Int64(duration) * 1000 + 1000)
        for wearer in wearers { await wearer.device.drain() }

        var tally = DeliveryTally()
        var raisedBy: [Int: [String: AlertKind]] = [:]
        var delivered: [Int: Int64] = [:]
        for (index, wearer) in wearers.enumerated() {
            try await tally.add(wearer.device, server: context.server)
            let raised = await wearer.device.raised
            if !raised.isEmpty { raisedBy[index] = raised }
            if let first = await wearer.device.delivered.values.min() { delivered[index] = first }
            await wearer.device.close()
        }
        let board = (try await request(context, "GET", "/v1/alerts?status=open"))["alerts"] as? [[String: Any]] ?? []
        let open = Set(board.compactMap { $0["device_id"] as? String })
        let alertsAtServer = board.count

        outcome.figures["population.wearers"] = Double(count)
        outcome.figures["population.seconds"] = Double(duration + 1)
        outcome.figures["population.readings"] = Double(readings)
        outcome.figures["population.wall_s"] = elapsed
        outcome.figures["population.readings_per_s"] = Double(readings) / max(0.001, elapsed)
        outcome.figures["population.alerts"] = Double(alertsAtServer)
        outcome.lines.append(
            "population: \(count) wearers, \(duration + 1) s at 1 Hz, \(readings) readings in \(String(format: "%.1f", elapsed)) s (\(String(format: "%.0f", Double(readings) / max(0.001, elapsed))) readings/s), \(withEpisode.count) episode(s), \(alertsAtServer) open alert(s) at the server"
        )
        check(&outcome, tally.whole, tally.description)
        for index in withEpisode.sorted() {
            guard let episode = wearers[index].episode else { continue }
            let id = wearers[index].device.deviceID
            let onset = episode.start + episode.onset
            let delay = delivered[index].map { Double($0) / 1000 - Double(onset) }
            let kinds = raisedBy[index].map { $0.values.map(\.rawValue).sorted().joined(separator: ", ") } ?? "none"
            check(&outcome, open.contains(id), "\(id)'s episode raised an alert (\(kinds)) that is open on the dispatcher's board")
            if let limit = scenario.expect.alertWithinSeconds {
                check(
                    &outcome,
                    delay.map { $0 <= limit } ?? false,
                    "\(id)'s alert reached the server within \(limit) s of the onset: \(delay.map { String(format: "%.0f s", $0) } ?? "never")"
                )
            }
            outcome.figures["population.alert_s.\(id)"] = delay ?? -1
        }
        let others = raisedBy.keys.filter { !withEpisode.contains($0) }.sorted().map { wearers[$0].device.deviceID }
        let strayOpen = open.subtracting(withEpisode.map { wearers[$0].device.deviceID })
        check(
            &outcome,
            others.isEmpty && strayOpen.isEmpty,
            "no wearer without an episode raised an alert: \(others.prefix(10)) raised, \(strayOpen.sorted().prefix(10)) open"
        )
        check(
            &outcome,
            alertsAtServer == withEpisode.count,
            "each alert once at the server: \(alertsAtServer) open for \(withEpisode.count) episode(s)"
        )
    }
}
