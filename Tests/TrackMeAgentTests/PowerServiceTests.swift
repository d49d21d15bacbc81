import Foundation
import Synchronization
import Testing
import TrackMeCore

@testable import TrackMeAgent

/// The device's own power: a `power_supply` tree laid out as the kernel lays it out (a UPS board's
/// battery gauge and its USB charger input), discharged step by step.
@Suite("device power")
struct PowerServiceTests {
    /// Writes one supply's attribute files, as sysfs shows them (a value and a newline).
    static func write(_ directory: borrowing TemporaryDirectory, _ name: String, _ attributes: [String: String]) throws {
        let supply = directory.file(name)
        try FileManager.default.createDirectory(atPath: supply, withIntermediateDirectories: true)
        for (file, value) in attributes {
            try (value + "\n").write(toFile: supply + "/" + file, atomically: true, encoding: .utf8)
        }
    }

    @Test("the heartbeat carries the charge and source; critical sends one heartbeat at once; the charger ends it")
    func dischargeToCritical() async throws {
        let directory = try TemporaryDirectory()
        try Self.write(directory, "usb", ["type": "USB", "online": "0"])
        try Self.write(directory, "BAT0", ["type": "Battery", "capacity": "57", "status": "Discharging"])
        let reader = PowerSupplyDirectory(path: directory.path)
        let heartbeat = AgentStateCell.testing()
        let sent = Atomic<Int>(0)
        let monitor = PowerMonitor(
            settings: PowerWatch.Settings(),
            state: heartbeat,
            feedback: nil,
            sendHeartbeat: { sent.add(1, ordering: .relaxed) },
            logger: quietLogger
        )

        await monitor.receive(reader.read())
        var beat = heartbeat.heartbeat()
        #expect(beat.deviceBatteryPercent == 57)
        #expect(beat.devicePower == .battery)
        #expect(beat.devicePowerLevel == nil)

        try Self.write(directory, "BAT0", ["capacity": "18"])
        await monitor.receive(reader.read())
        #expect(heartbeat.heartbeat().devicePowerLevel == .low)
        #expect(sent.load(ordering: .relaxed) == 0)

        for percent in [5, 4, 3] {
            try Self.write(directory, "BAT0", ["capacity": "\(percent)"])
            await monitor.receive(reader.read())
        }
        beat = heartbeat.heartbeat()
        #expect(beat.devicePowerLevel == .critical)
        #expect(beat.deviceBatteryPercent == 3)
        #expect(sent.load(ordering: .relaxed) == 1, "one last heartbeat, not one per reading")

        try Self.write(directory, "usb", ["online": "1"])
        try Self.write(directory, "BAT0", ["status": "Charging"])
        await monitor.receive(reader.read())
        beat = heartbeat.heartbeat()
        #expect(beat.devicePower == .charging)
        #expect(beat.devicePowerLevel == nil)
    }

    @Test("a board without supply nodes, or with unreadable ones, leaves the heartbeat without power fields")
    func noSupplies() async throws {
        let directory = try TemporaryDirectory()
        let heartbeat = AgentStateCell.testing()
        let monitor = PowerMonitor(settings: PowerWatch.Settings(), state: heartbeat, feedback: nil, sendHeartbeat: {}, logger: quietLogger)
        await monitor.receive(PowerSupplyDirectory(path: directory.file("absent")).read())
        try Self.write(directory, "BAT0", ["type": "Battery", "capacity": "not a number", "status": "Discharging"])
        // A directory where a file should be: unreadable, skipped.
        try FileManager.default.createDirectory(atPath: directory.file("BAT0/capacity_level"), withIntermediateDirectories: true)
        await monitor.receive(PowerSupplyDirectory(path: directory.path).read())
        let beat = heartbeat.heartbeat()
        #expect(beat.deviceBatteryPercent == nil)
        #expect(beat.devicePower == .battery)
        #expect(beat.devicePowerLevel == nil)
        let encoded = String(decoding: try WireCodec.encode(AgentStateCell.testing().heartbeat()), as: UTF8.self)
        #expect(!encoded.contains("device_"), "\(encoded)")
    }

    @Test("the wearer sees the battery warning for the device's battery as for the strap's")
    func feedback() {
        var machine = FeedbackMachine()
        #expect(machine.receive(.deviceBatteryLow(true), now: .zero) == .batteryLow)
        // The strap's battery recovering does not hide the device's.
        #expect(machine.receive(.batteryLow(false), now: .seconds(1)) == nil)
        #expect(machine.receive(.deviceBatteryLow(false), now: .seconds(2)) == .idle)
    }

    @Test("power: settings are read, and a critical level at or above the low one is refused")
    func configuration() throws {
        let yaml = """
            person: {name: Ada, age: 67}
            server: {url: https://trackme.example.org, device_id: pi-0042}
            power: {supply_directory: /run/fake-power, low_percent: 25, critical_percent: 8, poll_seconds: 10}
            """
        let power = try ConfigurationLoader.parse(yaml: yaml).power
        #expect(power == PowerConfiguration(supplyDirectory: "/run/fake-power", lowPercent: 25, criticalPercent: 8, pollSeconds: 10))
        #expect(
            try ConfigurationLoader.parse(yaml: "person: {name: Ada, age: 67}\nserver: {url: https://x.org, device_id: pi-1}\n").power
                == PowerConfiguration()
        )
        let bad = "person: {name: Ada, age: 67}\nserver: {url: https://x.org, device_id: pi-1}\npower: {low_percent: 10, critical_percent: 10}\n"
        let error = try #require(throws: ConfigurationError.self) { try ConfigurationLoader.parse(yaml: bad) }
        #expect(error.issues.map(\.description).contains { $0.contains("critical_percent") && $0.contains("below low_percent") }, "\(error.issues)")
    }
}
