import Foundation
import Testing

@testable import TrackMeAgent

@Suite("executable pages given back after start-up", .serialized)
struct ExecutablePagesTests {
    static let smaps = """
        5600000000-5600001000 r--p 00000000 fd:01 42                         /usr/local/bin/trackme-agent
        Size:                  4 kB
        Rss:                   4 kB
        Anonymous:             0 kB
        VmFlags: rd mr mw me
        5600001000-5600300000 r-xp 00001000 fd:01 42                         /usr/local/bin/trackme-agent
        Size:               3068 kB
        Rss:                2400 kB
        Anonymous:             0 kB
        VmFlags: rd ex mr mw me
        5600300000-5600400000 r--p 00300000 fd:01 42                         /usr/local/bin/trackme-agent
        Size:               1024 kB
        Rss:                1000 kB
        Anonymous:           900 kB
        VmFlags: rd mr mw me ac
        5600400000-5600500000 rw-p 00400000 fd:01 42                         /usr/local/bin/trackme-agent
        Size:               1024 kB
        Rss:                 300 kB
        Anonymous:             0 kB
        VmFlags: rd wr mr mw me ac
        7f00000000-7f00100000 r-xp 00000000 fd:01 77                         /usr/lib/x86_64-linux-gnu/libc.so.6
        Size:               1024 kB
        Rss:                 800 kB
        Anonymous:             0 kB
        VmFlags: rd ex mr mw me
        7f00100000-7f00200000 rw-p 00000000 00:00 0
        Rss:                 100 kB
        Anonymous:           100 kB
        """

    @Test("only the executable's read-only mappings without written pages: never RELRO (relocated), data or libraries")
    func releasableMappings() {
        let found = ExecutablePages.releasable(smaps: Self.smaps, path: "/usr/local/bin/trackme-agent")
        #expect(found.map(\.start) == [0x56_0000_0000, 0x56_0000_1000])
        #expect(found.map(\.permissions) == ["r--p", "r-xp"])
        #expect(found.map(\.residentKilobytes) == [4, 2400])
        #expect(ExecutablePages.releasable(smaps: Self.smaps, path: "/usr/local/bin/other").isEmpty)
    }

    /// This test process's own executable: its code is mostly resident after the suites ran;
    /// released, what comes back is what runs, and the process keeps working (relocated data
    /// and the heap are untouched).
    @Test("released in this process: far fewer resident pages of the executable, and it keeps running")
    func releaseInThisProcess() throws {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        func resident() throws -> Int {
            let smaps = try String(contentsOfFile: "/proc/self/smaps", encoding: .utf8)
            return ExecutablePages.releasable(smaps: smaps, path: executable).reduce(0) { $0 + $1.residentKilobytes }
        }
        let before = try resident()
        try #require(before >= 1024, "the test binary's code should be resident after the suites ran: \(before) kB")
        let outcome = ExecutablePages.release()
        let after = try resident()
        #expect(outcome.error == nil)
        #expect(outcome.mappings >= 1)
        #expect(outcome.residentKilobytesBefore >= before / 2)
        #expect(after < before / 2, "resident kB of the executable's read-only mappings: \(before) before, \(after) after")
        // Code, relocated data and heap still work.
        let text = (0..<1000).map(String.init).joined(separator: ",")
        #expect(text.split(separator: ",").count == 1000)
        #expect(try JSONDecoder().decode([Int].self, from: Data("[1,2,3]".utf8)) == [1, 2, 3])
    }
}
