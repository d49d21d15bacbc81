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

// MARK: - GPS position (issue 4)

// MARK: - Store and sync (issue 6)

// MARK: - Server (issue 7)

// The PostgreSQL backend is behind the package trait "PostgreSQL" (`swift build --traits
// PostgreSQL`) so that the default build neither fetches nor compiles postgres-nio.
targets += [
    .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
    .target(
        name: "TrackMeServer",
        dependencies: [
            "TrackMeCore",
            "CZlib",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
        ],
        swiftSettings: strictSettings
    ),
    .executableTarget(
        name: "trackme-server",
        dependencies: [
            "TrackMeServer",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
        ],
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "TrackMeServerTests",
        dependencies: [
            "TrackMeServer", "TrackMeCore", "CZlib",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ],
        swiftSettings: strictSettings
    ),
]

// MARK: - Agent (issue 9)

targets += [
    .executableTarget(
        name: "trackme-agent",
        dependencies: [
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
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
            // server benchmark (issue 7)
            "TrackMeServer", "TrackMeCore",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
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
        .executable(name: "trackme-server", targets: ["trackme-server"]),
    ],
    traits: [
        .trait(name: "PostgreSQL", description: "The server's PostgreSQL storage backend (postgres-nio)."),
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
        // server
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: targets,
    swiftLanguageModes: [.v6]
)
