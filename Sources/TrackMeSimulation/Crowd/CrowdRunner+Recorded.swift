import Foundation
import TrackMeAgent
import TrackMeCore
import TrackMeServer

/// A race of recorded runners (`crowd.race.tracks`): each track replayed through its own
/// agent (`CrowdDevice`, runner profile) fix by fix at its own times, a second with no fix left
/// without one, into the one in-process server. After every race second the organiser's view
/// (`GET /v1/runs/ID`) is read as the organiser's page reads it, and every few seconds the
/// spectators' (`/v1/public/runs/ID`); what they said is checked against the recordings.
extension CrowdRunner {
    struct RecordedRunner {
        var device: CrowdDevice
        var track: RecordedTrack
        /// Fixes by the race second they are fed in (a fix at race ms t goes in second ceil(t/1000)).
        var schedule: [Int: [(milliseconds: Int64, point: RecordedTrack.Point)]] = [:]
        /// The fixes fed, by race ms, to know a runner's own positions when the page shows one.
        var own: [Int64: RecordedTrack.Point] = [:]
        var truth: TrackTruth
        /// Race ms of the first and last fix fed.
        var first: Int64
        var last: Int64
        var gaps: [RecordedRace.Gap] = []
        var strap: [Int: [HeartRateReading]] = [:]
    }

    /// A gap in a recording at least this long is a watch gap the page must show.
    static let watchGapMilliseconds: Int64 = 15_000
    /// A runner is not stale while their newest fix is younger than this.
    static let freshFixMilliseconds: Int64 = 5_000

    func runRecordedRace(
        _ race: CrowdScenario.Race,
        tracks patterns: [String],
        scenario: CrowdScenario,
        context: Context,
        into outcome: inout Outcome
    ) async throws {
        let directory = options.scenarioDirectory ?? options.simulationsDirectory.appendingPathComponent("scenarios")
        func resolve(_ path: String) -> URL { path.hasPrefix("/") ? URL(fileURLWithPath: path) : directory.appendingPathComponent(path) }
        let tracks = try RecordedTracks.load(patterns, relativeTo: directory)
        guard !tracks.isEmpty else { throw ScenarioError(message: "crowd.race.tracks names no track") }
        let gpx: String
        do { gpx = try String(contentsOf: resolve(race.course), encoding: .utf8) } catch {
            throw ScenarioError(message: "crowd.race.course \(resolve(race.course).path): \(error.localizedDescription)")
        }
        let path: RunPath
        do { path = try RunPath.parseGPX(gpx) } catch { throw ScenarioError(message: "crowd.race.course \(resolve(race.course).path): \(error)") }
        let raceMetres = race.distanceMetres ?? path.length
        let align = race.align ?? .start
        let gun = tracks.compactMap { $0.points.first?.milliseconds }.min() ?? 0

        let created = try await request(
            context,
            "POST",
            "/v1/runs",
            json: [
                "name": scenario.name, "start_ms": context.wall.anchor.wall(0), "end_ms": context.wall.anchor.wall(12 * 3600 * 1000),
                "code": "SIM-RACE", "gpx": gpx, "distance_m": raceMetres,
            ]
        )
        guard let runID = created["id"] as? String else { throw ScenarioError(message: "the server did not create the run: \(created)") }
        _ = try await request(context, "POST", "/v1/runs/\(runID)/enrolment", json: ["open": true])
        try await watchFrom(context, page: "/runs/\(runID)", role: "organiser", displayName: "Demo organiser")

        var collapseOnset: Int64?
        var strap: [Int: [HeartRateReading]] = [:]
        if let collapse = race.collapse {
            guard tracks.indices.contains(collapse.runner - 1) else {
                throw ScenarioError(message: "collapse.runner \(collapse.runner) is not one of the \(tracks.count) runners")
            }
            strap = Self.bySecond(try loadTrace(collapse.trace, field: "collapse.trace"))
            collapseOnset = Int64(collapse.onsetSeconds) * 1000
        }

        var runners: [RecordedRunner] = []
        for (index, recorded) in tracks.enumerated() {
            let id = String(format: "runner-%03d", index + 1)
            let person = PersonProfile(name: recorded.name, age: 20 + index % 50)
            let collapses = race.collapse?.runner == index + 1
            let device = try await context.device(
                id,
                person: person,
                profile: .runner,
                seed: UInt64(index + 1),
                wearsStrap: collapses
            )
            _ = try await device.control.joinRun(code: "SIM-RACE", show: true)
            _ = try await device.control.checkInToRun()
            let shift = align == .start ? recorded.points[0].milliseconds : gun
            var points = recorded.points.map { point in
                var moved = point
                moved.milliseconds -= shift
                return moved
            }
            if collapses, let onset = collapseOnset {
                // The runner drops where they were at the onset and lies still; the watch goes on
                // recording that place each second.
                points = points.filter { $0.milliseconds < onset }
                if let down = points.last {
                    let end = (recorded.points.last?.milliseconds ?? shift) - shift
                    var t = max(onset, down.milliseconds + 1000)
                    while t <= end {
                        points.append(RecordedTrack.Point(milliseconds: t, latitude: down.latitude, longitude: down.longitude, speed: 0))
                        t += 1000
                    }
                }
            }
            var runner = RecordedRunner(
                device: device,
                track: RecordedTrack(name: recorded.name, file: recorded.file, points: points),
                truth: TrackTruth(points),
                first: points.first?.milliseconds ?? 0,
                last: points.last?.milliseconds ?? 0,
                strap: collapses ? strap : [:]
            )
            for point in points {
                let second = Int((max(0, point.milliseconds) + 999) / 1000)
                runner.schedule[second, default: []].append((point.milliseconds, point))
                runner.own[point.milliseconds] = point
            }
            for (a, b) in zip(points, points.dropFirst()) where b.milliseconds - a.milliseconds >= Self.watchGapMilliseconds {
                runner.gaps.append(RecordedRace.Gap(fromSeconds: Double(a.milliseconds) / 1000, toSeconds: Double(b.milliseconds) / 1000))
            }
            runners.append(runner)
        }
        let byDevice = Dictionary(uniqueKeysWithValues: runners.enumerated().map { ($1.device.deviceID, $0) })
        let lastFix = runners.map(\.last).max() ?? 0
        // To the last fix and a little after it, so that the last runner's staleness shows.
        let duration = race.durationSeconds > 0 ? race.durationSeconds : Int((lastFix + 999) / 1000) + 15

        var identitySwaps = 0
        var firstSwap: String?
        var staleShown = 0.0
        var staleFresh = 0.0
        var firstFresh: String?
        var spectatorMissing = 0
        var firstMissing: String?
        var fed: [Int64?] = runners.map { _ in nil }
        let started = ContinuousClock.now
        for second in 0...duration {
            let ms = try await context.enter(second)
            let snapshot = runners
            await withTaskGroup(of: Void.self) { group in
                var next = 0
                func add(_ i: Int) {
                    let runner = snapshot[i]
                    group.addTask {
                        for reading in runner.strap[second] ?? [] { await runner.device.heartRate(reading, at: ms) }
                        for (at, point) in runner.schedule[second] ?? [] {
                            let fix = PositionFix(
                                mode: .threeDimensional,
                                latitude: point.latitude,
                                longitude: point.longitude,
                                speed: point.speed
                            )
                            await runner.device.position(fix, at: at)
                        }
                        await runner.device.commit()
                        await runner.device.syncStep(at: ms)
                    }
                }
                while next < min(options.concurrency, snapshot.count) {
                    add(next)
                    next += 1
                }
                for await _ in group where next < snapshot.count {
                    add(next)
                    next += 1
                }
            }
            for i in runners.indices { if let newest = runners[i].schedule[second]?.last?.milliseconds { fed[i] = newest } }

            // The organiser's view, as the organiser's page reads it.
            for entry in try await allPages(context, "/v1/runs/\(runID)", key: "entries") {
                guard let deviceID = entry["device_id"] as? String, let i = byDevice[deviceID] else { continue }
                let name = runners[i].track.name
                if let fixWall = (entry["fix_ms"] as? NSNumber)?.int64Value, let lat = (entry["lat"] as? NSNumber)?.doubleValue,
                    let lon = (entry["lon"] as? NSNumber)?.doubleValue
                {
                    let fixMs = fixWall - context.wall.anchor.origin
                    let own = runners[i].own[fixMs]
                    if own.map({ abs($0.latitude - lat) > 1e-7 || abs($0.longitude - lon) > 1e-7 }) ?? true {
                        identitySwaps += 1
                        if firstSwap == nil {
                            firstSwap = "\(name) shown at \(lat),\(lon) at race \(Double(fixMs) / 1000) s, not a fix of theirs (second \(second))"
                        }
                    }
                }
                guard (entry["stale"] as? Bool) == true, let newest = fed[i], ms <= runners[i].last else { continue }
                staleShown += 1
                if ms - newest <= Self.freshFixMilliseconds {
                    staleFresh += 1
                    if firstFresh == nil { firstFresh = "\(name) at second \(second), newest fix \(Double(newest) / 1000) s" }
                }
                for g in runners[i].gaps.indices where runners[i].gaps[g].shownStaleAfterSeconds == nil {
                    let gap = runners[i].gaps[g]
                    if Double(second) > gap.fromSeconds, Double(second) < gap.toSeconds {
                        runners[i].gaps[g].shownStaleAfterSeconds = Double(second) - gap.fromSeconds
                    }
                }
            }
            // The spectators' page: every runner with a fix (allowing the page its 2 s) is on it.
            if second % 5 == 0 {
                let page = try await request(context, "GET", "/v1/public/runs/\(runID)", token: nil)
                let shown = Set((page["runners"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String })
                for (i, runner) in runners.enumerated() where fed[i] != nil && ms - runner.first > 2000 && !shown.contains(runner.track.name) {
                    spectatorMissing += 1
                    if firstMissing == nil { firstMissing = "\(runner.track.name) at second \(second)" }
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        context.wall.set(Int64(duration) * 1000 + 1000)
        for runner in runners { await runner.device.drain() }
        var shown: [String: [String: Any]] = [:]
        for entry in try await allPages(context, "/v1/runs/\(runID)", key: "entries") {
            if let deviceID = entry["device_id"] as? String { shown[deviceID] = entry }
        }

        var tally = DeliveryTally()
        for runner in runners {
            try await tally.add(runner.device, server: context.server)
        }
        let reports = runners.map { runner in
            let entry = shown[runner.device.deviceID] ?? [:]
            return RecordedRace.Runner(
                name: runner.track.name,
                file: runner.track.file,
                distanceMetres: (entry["distance_m"] as? NSNumber)?.doubleValue,
                finishElapsedSeconds: (entry["finish_elapsed_s"] as? NSNumber)?.doubleValue,
                rank: (entry["rank"] as? NSNumber)?.intValue,
                trueDistanceMetres: runner.truth.distance,
                trueFinishElapsedSeconds: runner.truth.moment(reaching: raceMetres).map { Double($0) / 1000 },
                fixes: runner.track.points.count,
                jumpsDropped: runner.truth.jumps,
                gaps: runner.gaps
            )
        }
        outcome.race = RecordedRace.Report(
            align: align,
            distanceMetres: raceMetres,
            durationSeconds: duration,
            runners: reports,
            identitySwaps: identitySwaps,
            staleShownSeconds: staleShown,
            staleWithFreshFixSeconds: staleFresh,
            spectatorMissing: spectatorMissing
        )
        let seconds = ScenarioRunner.milliseconds(elapsed) / 1000
        outcome.figures["race.runners"] = Double(runners.count)
        outcome.figures["race.fixes"] = Double(tally.fixes)
        outcome.figures["race.wall_s"] = seconds
        outcome.figures["race.real_time_ratio"] = seconds / Double(duration + 1)
        outcome.lines.append(
            "recorded race: \(runners.count) tracks (\(align.rawValue) aligned), \(String(format: "%.0f", raceMetres)) m, \(duration + 1) s at 1 Hz, \(tally.fixes) fixes, \(String(format: "%.1f", seconds)) s (\(String(format: "%.3f", seconds / Double(duration + 1))) x real time)"
        )
        check(&outcome, tally.whole, tally.description)
        let expect = scenario.expect.race ?? RecordedRace.Expectations()
        Self.checkRecorded(expect, reports: reports, raceMetres: raceMetres, into: &outcome)
        if expect.noIdentitySwaps == true {
            check(
                &outcome,
                identitySwaps == 0,
                "every position shown is the runner's own fix: \(identitySwaps) not\(firstSwap.map { "; first: \($0)" } ?? "")"
            )
        }
        if let limit = expect.gapsShownStaleWithinSeconds {
            let gaps = reports.flatMap { runner in runner.gaps.map { (runner.name, $0) } }
            let due = gaps.filter { $0.1.toSeconds - $0.1.fromSeconds > limit + 2 }
            let late = due.filter { ($0.1.shownStaleAfterSeconds ?? .infinity) > limit }
            check(
                &outcome,
                late.isEmpty && staleFresh == 0,
                "every watch gap over \(Int(limit)) s shown stale within \(Int(limit)) s (\(due.count) gaps; late or never: \(late.map { "\($0.0) at \(Int($0.1.fromSeconds)) s" })), none stale with a fix under \(Self.freshFixMilliseconds / 1000) s old (\(Int(staleFresh)) s\(firstFresh.map { "; first: \($0)" } ?? ""))"
            )
        }
        if expect.everyRunnerShown == true {
            check(
                &outcome,
                spectatorMissing == 0,
                "every runner with a fix is on the spectator page: \(spectatorMissing) missing\(firstMissing.map { "; first: \($0)" } ?? "")"
            )
        }
        try await checkRecordedAlerts(
            race,
            expect: expect,
            scenario: scenario,
            runners: runners,
            onset: collapseOnset,
            context: context,
            into: &outcome
        )
        for runner in runners { await runner.device.close() }
    }

    /// Distances, finishes and their order against the recordings.
    static func checkRecorded(_ expect: RecordedRace.Expectations, reports: [RecordedRace.Runner], raceMetres: Double, into outcome: inout Outcome) {
        func check(_ ok: Bool, _ line: String) {
            outcome.lines.append((ok ? "ok   " : "FAIL ") + line)
            if !ok { outcome.passed = false }
        }
        let percent = expect.distanceWithinPercent ?? 2
        if let pct = expect.distanceWithinPercent {
            let off = reports.filter { runner in
                guard let shown = runner.distanceMetres, runner.trueDistanceMetres > 0 else { return true }
                return abs(shown - runner.trueDistanceMetres) / runner.trueDistanceMetres * 100 > pct
            }
            let needed = expect.distanceMinRunners ?? reports.count
            check(
                reports.count - off.count >= needed,
                "\(reports.count - off.count) of \(reports.count) distances within \(pct) % of the recording's (\(needed) needed)\(off.isEmpty ? "" : "; off: " + off.prefix(5).map { "\($0.name) \(String(format: "%.0f", $0.distanceMetres ?? -1)) m for \(String(format: "%.0f", $0.trueDistanceMetres)) m" }.joined(separator: ", "))"
            )
        }
        let tolerance = expect.finishWithinSeconds ?? 5
        if let limit = expect.finishWithinSeconds {
            let wrong = reports.filter { runner in
                switch (runner.finishElapsedSeconds, runner.trueFinishElapsedSeconds) {
                case (nil, nil): return false
                case (let shown?, let truth?): return abs(shown - truth) > limit
                default: return true
                }
            }
            let needed = expect.finishMinRunners ?? reports.count
            let finished = reports.filter { $0.trueFinishElapsedSeconds != nil }.count
            check(
                reports.count - wrong.count >= needed,
                "\(reports.count - wrong.count) of \(reports.count) finishes (\(finished) reach \(Int(raceMetres)) m in the recordings) within \(Int(limit)) s of the recording's (\(needed) needed)\(wrong.isEmpty ? "" : "; wrong: " + wrong.prefix(5).map { "\($0.name) \($0.finishElapsedSeconds.map { String(format: "%.1f s", $0) } ?? "none") for \($0.trueFinishElapsedSeconds.map { String(format: "%.1f s", $0) } ?? "none")" }.joined(separator: ", "))"
            )
        }
        if expect.finishOrderMatchesRecordings == true {
            let ranked = reports.sorted { ($0.rank ?? .max) < ($1.rank ?? .max) }
            var violations: [String] = []
            for (a, above) in ranked.enumerated() {
                for below in ranked[(a + 1)...] where Self.truthAhead(below, of: above, seconds: tolerance, percent: percent) {
                    violations.append("\(below.name) (rank \(below.rank ?? 0)) is ahead of \(above.name) (rank \(above.rank ?? 0)) in the recordings")
                }
            }
            check(
                violations.isEmpty && ranked.allSatisfy { $0.rank != nil },
                "the server's ranking is the recordings' order (finishers by finish, then by distance): \(violations.count) pairs out of order\(violations.first.map { "; first: \($0)" } ?? "")"
            )
        }
    }

    /// Whether the recordings put `b` ahead of `a` beyond the tolerances.
    static func truthAhead(_ b: RecordedRace.Runner, of a: RecordedRace.Runner, seconds: Double, percent: Double) -> Bool {
        switch (a.trueFinishElapsedSeconds, b.trueFinishElapsedSeconds) {
        case (let fa?, let fb?): return fb < fa - seconds
        case (nil, .some): return true
        case (.some, nil): return false
        case (nil, nil): return b.trueDistanceMetres > a.trueDistanceMetres * (1 + percent / 100)
        }
    }

    /// Every alert raised and open; with a collapse, its alert on the board within the limit and
    /// no other; otherwise none at all.
    func checkRecordedAlerts(
        _ race: CrowdScenario.Race,
        expect: RecordedRace.Expectations,
        scenario: CrowdScenario,
        runners: [RecordedRunner],
        onset: Int64?,
        context: Context,
        into outcome: inout Outcome
    ) async throws {
        let board = try await request(context, "GET", "/v1/alerts?status=open")
        let open = Set((board["alerts"] as? [[String: Any]] ?? []).compactMap { $0["device_id"] as? String })
        var alerts: [CrowdAlert] = []
        for runner in runners {
            let delivered = await runner.device.delivered
            for (id, kind) in await runner.device.raised.sorted(by: { $0.key < $1.key }) {
                alerts.append(
                    CrowdAlert(
                        deviceID: runner.device.deviceID,
                        name: runner.track.name,
                        kind: kind.rawValue,
                        deliveredMilliseconds: delivered[id],
                        openOnBoard: open.contains(runner.device.deviceID)
                    )
                )
            }
        }
        outcome.alerts = alerts
        let summary = alerts.map { "\($0.name) \($0.kind)" }
        if let collapse = race.collapse, let onset {
            let device = runners[collapse.runner - 1].device.deviceID
            let delivered = alerts.filter { $0.deviceID == device }.compactMap(\.deliveredMilliseconds).min()
            let delay = delivered.map { Double($0 - onset) / 1000 }
            outcome.figures["race.collapse_alert_s"] = delay ?? -1
            let limit = scenario.expect.alertWithinSeconds ?? 60
            check(
                &outcome,
                open.contains(device) && delay.map { $0 <= limit } ?? false,
                "\(runners[collapse.runner - 1].track.name)'s collapse is an open alert on the dispatcher's board within \(Int(limit)) s of the onset: \(delay.map { String(format: "%.0f s", $0) } ?? "never")"
            )
            check(
                &outcome,
                alerts.allSatisfy { $0.deviceID == device } && open.allSatisfy { $0 == device },
                "no other runner raised an alert: \(summary)"
            )
        } else if expect.noAlerts == true {
            check(&outcome, alerts.isEmpty && open.isEmpty, "no runner raised an alert: \(summary), \(open.count) open on the board")
        }
    }
}
