import Foundation
import SystemPackage
import TrackMeCore
import TrackMeSystem

/// A real certificate authority made by the test with Debian's `openssl`: a CA key and
/// certificate, and server certificates it signs for the names asked. Files live in a temporary
/// folder removed by `remove()`.
struct TestCertificateAuthority: Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let directory: URL
    let name: String
    var certificatePath: String { directory.appendingPathComponent("\(name)-ca.pem").path }
    var keyPath: String { directory.appendingPathComponent("\(name)-ca.key").path }

    /// A new CA named `name` (its common name is "TrackMe Test CA <name>").
    static func make(_ name: String, in directory: URL) async throws -> TestCertificateAuthority {
        let ca = TestCertificateAuthority(directory: directory, name: name)
        try await openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", "/CN=TrackMe Test CA \(name)", "-keyout", ca.keyPath, "-out", ca.certificatePath,
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        return ca
    }

    /// A server certificate for `names` (DNS names or IP addresses) signed by this CA; returns
    /// the certificate and key paths.
    func issue(_ file: String, names: [String]) async throws -> (certificate: String, key: String) {
        let key = directory.appendingPathComponent("\(file).key").path
        let request = directory.appendingPathComponent("\(file).csr").path
        let certificate = directory.appendingPathComponent("\(file).pem").path
        let extensions = directory.appendingPathComponent("\(file).ext").path
        let alternativeNames = names.map { $0.first?.isNumber == true || $0.contains(":") ? "IP:\($0)" : "DNS:\($0)" }
        try "subjectAltName=\(alternativeNames.joined(separator: ","))\nextendedKeyUsage=serverAuth\n"
            .write(toFile: extensions, atomically: true, encoding: .utf8)
        try await Self.openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=\(names.first ?? file)",
            "-keyout", key, "-out", request,
        ])
        try await Self.openssl([
            "x509", "-req", "-in", request, "-CA", certificatePath, "-CAkey", keyPath, "-CAcreateserial", "-days", "2",
            "-extfile", extensions, "-out", certificate,
        ])
        return (certificate, key)
    }

    static func openssl(_ arguments: [String]) async throws {
        let result = try await run("/usr/bin/openssl", arguments)
        guard result.status == 0 else { throw Failure(description: "openssl \(arguments.joined(separator: " ")): \(result.output)") }
    }

    /// Runs a program to its end; its exit status and its output (stdout, then stderr).
    static func run(_ executable: String, _ arguments: [String]) async throws -> (status: Int32, output: String) {
        let result = await ProcessRunner.run(ChildProcess(FilePath(executable), arguments: arguments, output: .captured(limit: 1 << 22)))
        let output = result.standardOutputText + result.standardErrorText
        switch result.outcome {
        case .exited(let status): return (status, output)
        case .signalled(let signal): return (128 + signal, output)
        case .timedOut, .stopped: throw Failure(description: "\(executable) was stopped: \(output)")
        case .notStarted(let reason): throw Failure(description: "\(executable) did not start: \(reason)")
        }
    }

    /// `curl` over HTTPS trusting only `caFile`: the HTTP status, or nil and curl's exit code.
    static func curl(_ url: String, caFile: String, headers: [String] = []) async throws -> (status: Int?, exitCode: Int32, output: String) {
        let result = try await run(
            "/usr/bin/curl",
            ["-sS", "--max-time", "120", "--cacert", caFile, "-o", "/dev/null", "-w", "%{http_code}"] + headers.flatMap { ["-H", $0] } + [url]
        )
        return (result.status == 0 ? Int(result.output.trimmingCharacters(in: .whitespacesAndNewlines)) : nil, result.status, result.output)
    }
}
