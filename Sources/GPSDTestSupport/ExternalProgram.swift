// Data path, step 6 (tests of step 2): the real gpsd and gpsfake for tests and field-mode scenarios.

import Foundation

/// Finds the gpsd tools, failing loudly when they are missing instead of skipping a test.
public enum ExternalProgram {
    /// The absolute path of `name`, searched in PATH and the sbin directories (gpsd lives in
    /// /usr/sbin, which a non-root PATH often lacks).
    public static func path(of name: String) throws(GPSDTestSupportError) -> String {
        let pathVariable = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = pathVariable.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/bin", "/sbin"]
        for directory in directories {
            let candidate = directory + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw GPSDTestSupportError(
            code: .programMissing,
            context: "\(name) not found in PATH or /usr/sbin: install Debian packages gpsd and gpsd-clients"
        )
    }
}
