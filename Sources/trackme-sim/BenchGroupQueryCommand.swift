import ArgumentParser
import Foundation
import Logging
import TrackMeServer

/// `trackme-sim bench group-query [--people 100000] [--days 30] [--rounds 5] [--db ...] [--json]`:
/// the anonymised group figures over a population of daily per-person summaries
/// generated in the database. Times the whole answer (snapping, the size rule, the difference
/// rule against every earlier answered group it overlaps, the percentiles) next to the plain
/// aggregate SQL over the same rows (distinct people, readings, sum) in the same run.
struct BenchGroupQueryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group-query",
        abstract: "Group figures over N simulated people x a month of daily summaries vs the plain aggregate SQL (same run)."
    )

    @Option(help: "Simulated people.") var people = 100_000
    @Option(help: "Days of daily summaries per person.") var days = 30
    @Option(help: "Queries of each kind, alternating; medians reported.") var rounds = 5
    @Option(help: "sqlite:PATH or postgres://... (default: a SQLite file in a temp dir).") var db: String?
    @Flag(help: "Print one JSON object.") var json = false

    func run() async throws {
        var logger = Logger(label: "trackme-sim.bench.group-query")
        logger.logLevel = .warning
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("trackme-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = db.map(StorageLocation.init(argument:)) ?? .sqlite(path: directory.appendingPathComponent("server.sqlite").path)
        let server = try await TrackMeServer(configuration: ServerConfiguration(host: "127.0.0.1", port: 0, storage: storage), logger: logger)
        let clock = ContinuousClock()
        let seeding = try await clock.measure { try await server.seedGroupPopulation(people: self.people, days: days) }

        // The population: ages in ten bands, 20 x 20 cells of 0.1 degree from (45.0, 9.0).
        // Each round asks the 70s over a box of 10 x 10 cells moved by one cell, the whole span:
        // overlapping groups, so every answer after the first is checked against the earlier ones.
        var plain: [Duration] = []
        var group: [Duration] = []
        var answered = 0
        var refused = 0
        var groupSize = 0
        for round in 0..<max(1, rounds) {
            let south = 45.0 + Double(round % 10) * 0.1
            let box = (south: south, west: 9.0, north: south + 1.0, east: 10.0)
            var count = 0
            plain.append(
                try await clock.measure {
                    count = try await server.plainGroupAggregate(
                        ageFrom: 70,
                        ageTo: 79,
                        south: box.south,
                        west: box.west,
                        north: box.north,
                        east: box.east,
                        days: days
                    )
                }
            )
            var outcome: TrackMeServer.GroupQueryOutcome?
            group.append(
                try await clock.measure {
                    outcome = try await server.groupQuery(
                        ageFrom: 70,
                        ageTo: 79,
                        south: box.south,
                        west: box.west,
                        north: box.north,
                        east: box.east,
                        days: days
                    )
                }
            )
            if outcome?.answered == true { answered += 1 } else { refused += 1 }
            groupSize = max(groupSize, count)
        }
        func ms(_ d: Duration) -> Double { Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15 }
        func median(_ values: [Duration]) -> Double { values.map(ms).sorted()[values.count / 2] }
        let result = Result(
            store: storage.description,
            people: self.people,
            days: days,
            rows: self.people * days,
            groupPeople: groupSize,
            rounds: group.count,
            answered: answered,
            refused: refused,
            seedingMilliseconds: ms(seeding),
            plainMedianMilliseconds: median(plain),
            groupMedianMilliseconds: median(group),
            groupMaxMilliseconds: group.map(ms).max() ?? 0,
            ratio: median(group) / max(median(plain), 0.001)
        )
        if json {
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
        } else {
            print(
                """
                group-query benchmark (\(result.store)): \(result.people) people x \(days) days = \(result.rows) daily summaries (seeded in \(Int(result.seedingMilliseconds)) ms)
                  group of the 70s over 10 x 10 cells: \(groupSize) people; \(answered) answered, \(refused) refused (differencing) of \(group.count)
                  plain aggregate SQL   median \(String(format: "%.1f", result.plainMedianMilliseconds)) ms
                  group figures         median \(String(format: "%.1f", result.groupMedianMilliseconds)) ms, max \(String(format: "%.1f", result.groupMaxMilliseconds)) ms (goal < 5000 ms)
                  ratio group / plain   \(String(format: "%.2f", result.ratio))
                """
            )
        }
    }

    struct Result: Encodable {
        var benchmark = "group-query"
        var store: String
        var people: Int
        var days: Int
        var rows: Int
        var groupPeople: Int
        var rounds: Int
        var answered: Int
        var refused: Int
        var seedingMilliseconds: Double
        var plainMedianMilliseconds: Double
        var groupMedianMilliseconds: Double
        var groupMaxMilliseconds: Double
        var ratio: Double
    }
}
