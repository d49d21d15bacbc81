// libFuzzer entry for the agent's YAML configuration (ConfigurationLoader over Yams and
// libyaml; built by run-fuzz.sh). Properties: no input traps; a file is either accepted or
// refused with at least one issue, each naming a line inside the file when it names one; an
// accepted configuration renders its `config check` summary.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfiguration(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    do throws(ConfigurationError) {
        let configuration = try ConfigurationLoader.parse(yaml: text, baseDirectory: "/etc/trackme")
        _ = configuration.summaryLines
    } catch {
        precondition(!error.issues.isEmpty, "refused without saying why")
        // libyaml breaks lines at LF, CR, NEL, LS and PS: at most one line per such character.
        let lines = text.unicodeScalars.filter { ["\n", "\r", "\u{85}", "\u{2028}", "\u{2029}"].contains($0) }.count + 1
        for issue in error.issues {
            if let line = issue.line { precondition(line >= 0 && line <= lines + 1, "issue on line \(line) of a \(lines)-line file") }
        }
        _ = error.description
    }
    return 0
}
