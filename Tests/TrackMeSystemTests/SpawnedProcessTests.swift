import Foundation
import Glibc
import Testing
import TrackMeSystem

/// A child the caller stops: how it ended, what it was given, and what it was not.
@Suite(.serialized) struct SpawnedProcessTests {
    @Test("an exit code and a signal are told apart, by the blocking wait and the async one alike")
    func terminations() async throws {
        let exits = try SpawnedProcess.launch("/bin/sh", arguments: ["-c", "exit 3"])
        #expect(await exits.exit() == .exited(3))
        #expect(exits.waitUntilExit() == .exited(3))
        #expect(!exits.isRunning)

        let sleeper = try SpawnedProcess.launch("sleep", arguments: ["600"])
        #expect(sleeper.isRunning)
        #expect(sleeper.killAndWait() == .signalled(SIGKILL))
        #expect(await sleeper.exit() == .signalled(SIGKILL))
        // Signalling an ended child does nothing (its pid may belong to another process by now).
        sleeper.signal(SIGKILL)
    }

    @Test("a pipe the parent holds is not inherited: its reader sees the end although the child runs on")
    func noInheritedDescriptors() throws {
        let pipe = Pipe()
        let child = try SpawnedProcess.launch("sleep", arguments: ["600"])
        defer { child.killAndWait() }
        try pipe.fileHandleForWriting.close()
        // With the write end inherited, this read would wait for the child's end.
        #expect(pipe.fileHandleForReading.readDataToEndOfFile().isEmpty)
        #expect(child.isRunning)
    }

    @Test("SIGTERM ignored in the parent is at its default in the child")
    func signalsStartAtDefault() async throws {
        let previous = Glibc.signal(SIGTERM, SIG_IGN)
        let child: SpawnedProcess
        do {
            defer { _ = Glibc.signal(SIGTERM, previous) }
            child = try SpawnedProcess.launch("sleep", arguments: ["600"])
        }
        child.signal(SIGTERM)
        let ending = await child.exit()
        if ending != .signalled(SIGTERM) { child.killAndWait() }
        #expect(ending == .signalled(SIGTERM))
    }

    @Test("output to a pipe reaches its end with the child; to a file, appended, from the directory asked for")
    func outputs() async throws {
        let pipe = Pipe()
        let echo = try SpawnedProcess.launch("/bin/echo", arguments: ["hello"], standardOutput: .pipe(pipe))
        #expect(String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "hello\n")
        #expect(await echo.exit() == .exited(0))

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("spawned-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/out.txt"
        try "before\n".write(toFile: file, atomically: true, encoding: .utf8)
        let pwd = try SpawnedProcess.launch(
            "/bin/sh",
            arguments: ["-c", "pwd; echo oops >&2"],
            directory: directory,
            standardOutput: .file(file),
            standardError: .file(file)
        )
        #expect(await pwd.exit() == .exited(0))
        let resolved = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path
        let text = try String(contentsOfFile: file, encoding: .utf8)
        #expect(text == "before\n\(resolved)\noops\n" || text == "before\n\(directory)\noops\n", "\(text)")
    }

    @Test("a program that is not there is an error naming it, and nothing is started")
    func missingProgram() {
        #expect(throws: SystemError.self) { try SpawnedProcess.launch("/nonexistent/trackme-no-such-program") }
        #expect(throws: SystemError.self) { try SpawnedProcess.launch("trackme-no-such-program") }
    }
}
