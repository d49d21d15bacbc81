import Foundation
import GPSDPosition
import Logging
import Testing
import TrackMeCore

/// The gpsd regression logs copied into simulations/traces/gpsd, with what gpsd produced for them.
enum TraceFixtures {
    static let directory: URL = {
        // Tests/GPSDPositionTests/TraceFixtures.swift -> package root
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("simulations/traces/gpsd")
    }()

    /// Every `.log` in the directory (index.tsv lists the same files and whether each has a fix).
    static let logNames: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".log") }.sorted()
    }()

    static func logURL(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// index.tsv's `has_fix` column, by file name.
    static func indexSaysHasFix(_ name: String) throws -> Bool {
        let text = try String(contentsOf: directory.appendingPathComponent("index.tsv"), encoding: .utf8)
        let rows = text.split(whereSeparator: \.isNewline).map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        let header = try #require(rows.first)
        let column = try #require(header.firstIndex(of: "has_fix"))
        let row = try #require(rows.first { $0.first.map(String.init) == name })
        return row[column] == "yes"
    }

    struct ExpectedFix: Equatable, CustomStringConvertible {
        var time: String?
        var mode: Int
        var latitude: Double
        var longitude: Double
        var description: String { "\(time ?? "-") mode \(mode) \(latitude),\(longitude)" }
    }

    /// The TPV objects with mode >= 2 from `NAME.chk`, in order.
    static func expectedFixes(_ name: String) throws -> [ExpectedFix] {
        let text = try String(contentsOf: directory.appendingPathComponent(name + ".chk"), encoding: .utf8)
        return try text.split(whereSeparator: \.isNewline).filter { $0.hasPrefix("{\"class\":\"TPV\"") }.compactMap { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let mode = try #require(object["mode"] as? Int)
            guard mode >= 2 else { return nil }
            return ExpectedFix(
                time: object["time"] as? String,
                mode: mode,
                latitude: try #require(object["lat"] as? Double),
                longitude: try #require(object["lon"] as? Double)
            )
        }
    }
}

/// Reads a reader's events and stops at a condition. Tests wait on events, never on time; the
/// suite's `.timeLimit` is only a safety net.
struct EventLog {
    var events: [GPSDEvent] = []

    var fixes: [PositionFix] {
        events.compactMap { if case .fix(let fix) = $0 { fix } else { nil } }
    }

    var states: [GPSDState] {
        events.compactMap { if case .state(let state) = $0 { state } else { nil } }
    }
}

extension AsyncStream<GPSDEvent>.Iterator {
    /// Collects events up to and including the first one matching `stop`; fails if the stream
    /// ends first.
    mutating func collect(
        until stop: (GPSDEvent) -> Bool,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> EventLog {
        var log = EventLog()
        while let event = await next() {
            log.events.append(event)
            if stop(event) { return log }
        }
        Issue.record("stream ended before the expected event; got \(log.events)", sourceLocation: sourceLocation)
        return log
    }

    /// Collects until gpsd reports the receiver closed after it had been open: with a log feed,
    /// that is the end of the log.
    mutating func collectUntilLogEnds(sourceLocation: SourceLocation = #_sourceLocation) async -> EventLog {
        var sawReceiver = false
        return await collect(
            until: { event in
                switch event {
                case .state(.noFix), .state(.fix), .fix:
                    sawReceiver = true
                    return false
                case .state(.noDevice): return sawReceiver
                case .state(.connected), .state(.disconnected): return false
                }
            },
            sourceLocation: sourceLocation
        )
    }
}

extension Logger {
    /// Warnings only: the reader logs every connection at info, which would drown test output.
    static let test: Logger = {
        var logger = Logger(label: "trackme.gpsd.tests")
        logger.logLevel = .warning
        return logger
    }()
}

extension GPSDState {
    var isDisconnected: Bool {
        if case .disconnected = self { true } else { false }
    }
}
