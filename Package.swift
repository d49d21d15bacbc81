// swift-tools-version: 6.1
// TrackMe Edge: an edge agent for Linux wearables (BLE heart rate, gpsd position, local SOS,
// durable offline buffer, idempotent sync) with its server and simulation harness.
import PackageDescription

// Every target of ours builds in Swift 6 language mode with these on (hummingbird's Package.swift
// does the same): explicit `any`, imports internal unless marked `public import`, and members
// visible only through a direct import.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

var targets: [Target] = []

// MARK: - Core (issue 2): domain model, wire format, SOS rules. No I/O, no dependencies of ours.

targets += [
    .target(name: "TrackMeCore", exclude: ["WIRE.md"], swiftSettings: strictSettings),
    .testTarget(name: "TrackMeCoreTests", dependencies: ["TrackMeCore"], swiftSettings: strictSettings),
]

// MARK: - System libraries (issue 2)

targets += [
    .systemLibrary(name: "CBlueZ", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),
    .systemLibrary(name: "CGPS", pkgConfig: "libgps", providers: [.apt(["libgps-dev"])]),
    .testTarget(name: "SystemLibraryTests", dependencies: ["CBlueZ", "CGPS"], swiftSettings: strictSettings),
]

// MARK: - BLE heart rate (issue 3)

// BlueZHeartRate: sans-I/O HRM/ATT/HCI bytes, the ATT client, the link supervisor, and the thin
// L2CAP/HCI socket shells over libbluetooth. SimulatedStrap: a GATT server speaking real ATT over a
// socket pair, for tests and the simulation harness.
targets += [
    .target(
        name: "BlueZHeartRate",
        dependencies: [
            "TrackMeCore", "CBlueZ",
            .product(name: "Logging", package: "swift-log"),
        ],
        swiftSettings: strictSettings
    ),
    .target(
        name: "SimulatedStrap",
        dependencies: ["BlueZHeartRate", "TrackMeCore"],
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "BlueZHeartRateTests",
        dependencies: [
            "BlueZHeartRate", "SimulatedStrap", "TrackMeCore",
            .product(name: "Logging", package: "swift-log"),
        ],
        swiftSettings: strictSettings
    ),
]

// MARK: - BLE in a VM (issue 10)

// The btmon captures under Tests/BlueZHeartRateTests/Fixtures are data for CapturedBytesTests
// (read from the source tree), not sources or resources. hardware/BLE-VM.md tells where they came from.
for index in targets.indices where targets[index].name == "BlueZHeartRateTests" {
    targets[index].exclude.append("Fixtures")
}

// MARK: - GPS position (issue 4)

// MARK: - Store and sync (issue 6)

// MARK: - Server (issue 7)

// MARK: - Agent (issue 9)

targets += [
    .executableTarget(
        name: "trackme-agent",
        dependencies: [
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            "BlueZHeartRate",
        ],
        swiftSettings: strictSettings
    ),
]

// MARK: - Simulation (issue 8)

targets += [
    .executableTarget(
        name: "trackme-sim",
        dependencies: [
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ],
        swiftSettings: strictSettings
    ),
]

let package = Package(
    name: "TrackMe",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "trackme-agent", targets: ["trackme-agent"]),
        .executable(name: "trackme-sim", targets: ["trackme-sim"]),
    ],
    dependencies: [
        // MARK: agent-side packages (no NIO here: the agent stays light on a Pi)
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        // MARK: server-side packages
    ],
    targets: targets,
    swiftLanguageModes: [.v6]
)
