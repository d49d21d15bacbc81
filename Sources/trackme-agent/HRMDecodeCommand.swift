import ArgumentParser
import BlueZHeartRate
import TrackMeCore

/// `trackme-agent hrm decode HEX`: decodes one 0x2A37 payload to one JSON object.
struct HRMDecodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Decode one Heart Rate Measurement payload given in hex (spaces optional)."
    )

    @Argument(parsing: .remaining, help: "The payload, e.g. 16 3c 11 04 or 163c1104.")
    var hex: [String]

    func run() async throws {
        guard let bytes = Hex.decode(hex.joined(separator: " "), ignoring: " \t\n\r:") else {
            FileHandleOutput.standardError("error: not hex bytes: \(hex.joined(separator: " "))")
            throw ExitCode(2)
        }
        do {
            FileHandleOutput.standardOutput(JSONLines.reading(try HeartRateMeasurement.decode(bytes)))
        } catch {
            FileHandleOutput.standardError("error: malformed heart rate measurement: \(error)")
            throw ExitCode(2)
        }
    }
}
