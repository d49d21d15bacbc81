import ArgumentParser
import BlueZHeartRate
import Logging

/// `trackme-agent hrm watch`: connects to a strap and prints each reading as a JSON line.
struct HRMWatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Connect to a strap and print readings as JSON lines; link events go to stderr."
    )

    @Option(help: "HCI adapter, e.g. hci1 (default: the first one).")
    var adapter: String?

    @Option(help: "Strap address AA:BB:CC:DD:EE:FF (default: the strongest strap nearby).")
    var address: String?

    @Option(help: "Address type: public or random.")
    var addressType: String = "public"

    @Option(help: "Exit after this many readings.")
    var count: Int?

    @Option(help: "Seconds to wait for each connection attempt.")
    var connectTimeout: Int = 10

    func validate() throws {
        if let address, BluetoothAddress(address) == nil {
            throw ValidationError("--address must look like AA:BB:CC:DD:EE:FF")
        }
        if BluetoothAddressType(rawValue: addressType) == nil {
            throw ValidationError("--address-type must be public or random")
        }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() async throws {
        let configuration = HeartRateWatch.Configuration(
            adapter: adapter,
            address: address.flatMap(BluetoothAddress.init),
            addressType: BluetoothAddressType(rawValue: addressType) ?? .public,
            count: count,
            connectTimeout: .seconds(max(1, connectTimeout))
        )
        var logger = Logger(label: "trackme.hrm")
        logger.logLevel = .warning
        await HeartRateWatch(configuration: configuration, logger: logger).run(
            output: { FileHandleOutput.standardOutput($0) },
            diagnostics: { FileHandleOutput.standardError($0) }
        )
    }
}
