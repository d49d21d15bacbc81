import Foundation
import Logging
import Synchronization
import Testing

@testable import TrackMeAgent

@Suite("Journald-friendly logging")
struct JournaldLogHandlerTests {
    final class Lines: Sendable {
        let value = Mutex<[String]>([])
        func append(_ line: String) { value.withLock { $0.append(line) } }
        var all: [String] { value.withLock { $0 } }
    }

    @Test(
        "under systemd each line carries the sd-daemon priority",
        arguments: [
            (Logger.Level.trace, "<7>"), (.debug, "<7>"), (.info, "<6>"), (.notice, "<5>"), (.warning, "<4>"),
            (.error, "<3>"), (.critical, "<2>"),
        ]
    )
    func priorities(level: Logger.Level, prefix: String) {
        let lines = Lines()
        var logger = Logger(label: "trackme.agent") { label in
            JournaldLogHandler(label: label, level: .trace, style: .journald, sink: lines.append)
        }
        logger.logLevel = .trace
        logger.log(level: level, "strap connected", metadata: ["ble.peripheral": "A0:9E:1A:12:34:56"])
        #expect(lines.all == ["\(prefix)trackme.agent: strap connected ble.peripheral=A0:9E:1A:12:34:56\n"])
    }

    @Test("plain lines start with a UTC timestamp and the level; metadata is key=value, sorted and quoted")
    func plain() {
        let line = JournaldLogHandler.format(
            level: .warning,
            label: "trackme.sync",
            message: "batch failed\nretrying",
            metadata: ["sync.batch_id": "b-1", "error": "connection refused", "n": "3"],
            style: .plain,
            date: Date(timeIntervalSince1970: 1_795_000_000.25)
        )
        #expect(line == "2026-11-18T11:06:40.250Z warning trackme.sync: batch failed\\nretrying error=\"connection refused\" n=3 sync.batch_id=b-1\n")
    }

    @Test("levels below the handler's are dropped")
    func levelFilter() {
        let lines = Lines()
        let logger = Logger(label: "t") { JournaldLogHandler(label: $0, level: .notice, style: .journald, sink: lines.append) }
        logger.info("hidden")
        logger.notice("shown")
        #expect(lines.all == ["<5>t: shown\n"])
    }

    @Test("journald style only when JOURNAL_STREAM names this process's stderr")
    func detection() throws {
        var info = stat()
        try #require(fstat(2, &info) == 0)
        let mine = "\(info.st_dev):\(info.st_ino)"
        #expect(JournaldLogHandler.detectedStyle(environment: ["JOURNAL_STREAM": mine]) == .journald)
        #expect(JournaldLogHandler.detectedStyle(environment: ["JOURNAL_STREAM": "1:2"]) == .plain)
        #expect(JournaldLogHandler.detectedStyle(environment: ["JOURNAL_STREAM": "junk"]) == .plain)
        #expect(JournaldLogHandler.detectedStyle(environment: [:]) == .plain)
    }
}
