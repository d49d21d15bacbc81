import ArgumentParser
import BlueZHeartRate
import SystemPackage

/// `trackme-agent scan`: lists heart-rate straps (devices advertising 0x180D) nearby.
struct ScanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Scan for BLE heart-rate straps (service 0x180D)."
    )

    @Option(help: "HCI adapter, e.g. hci0 (default: the first one).")
    var adapter: String?

    @Option(help: "How long to scan, in seconds.")
    var seconds: Int = 5

    @Flag(help: "One JSON object per strap: address, address_type, name, rssi, services.")
    var json = false

    @Flag(help: "List every LE device seen, not only those advertising 0x180D.")
    var all = false

    func run() async throws {
        let straps: [DiscoveredStrap]
        do {
            straps = try await HCIScanner.scan(adapter: adapter, duration: .seconds(max(1, seconds)), includeAll: all)
        } catch {
            FileHandleOutput.standardError("scan failed: \(error)")
            throw ExitCode(1)
        }
        for strap in straps {
            if json {
                FileHandleOutput.standardOutput(JSONLines.strap(strap))
            } else {
                FileHandleOutput.standardOutput(
                    "\(strap.address) \(strap.addressType.rawValue) rssi \(strap.signalStrength.map { "\($0) dBm" } ?? "n/a") \(strap.name ?? "(no name)")"
                )
            }
        }
    }
}

/// Line output on the standard streams, one unbuffered write per line so pipes see each line
/// at once and lines from concurrent writers never interleave.
enum FileHandleOutput {
    static func standardOutput(_ line: String) { writeLine(line, to: .standardOutput) }

    static func standardError(_ line: String) { writeLine(line, to: .standardError) }

    private static func writeLine(_ line: String, to descriptor: FileDescriptor) {
        // A closed pipe or full disk: the line is lost, as with print.
        _ = try? descriptor.writeAll((line + "\n").utf8)
    }
}
