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

// MARK: - Core: domain model, wire format, SOS rules. No I/O, no dependencies of ours.

targets += [
    .target(name: "TrackMeCore", exclude: ["WIRE.md"], swiftSettings: strictSettings),
    .testTarget(name: "TrackMeCoreTests", dependencies: ["TrackMeCore"], swiftSettings: strictSettings),
]

// MARK: - System: the system-call layer every shell shares, and nothing else.

// The one errno error and descriptor owner (SystemError.swift, on swift-system), the threads for
// blocking calls, a reader thread's stop flag, and the two ways a child starts: run to its end
// (ProcessRunner, on swift-subprocess) or run until stopped (SpawnedProcess, on posix_spawn);
// never Foundation's `Process`: see SpawnedProcess.swift for why.
targets += [
    .target(
        name: "TrackMeSystem",
        dependencies: [
            .product(name: "Subprocess", package: "swift-subprocess"),
            .product(name: "SystemPackage", package: "swift-system"),
        ],
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "TrackMeSystemTests",
        dependencies: ["TrackMeSystem", "TrackMeCore", .product(name: "SystemPackage", package: "swift-system")],
        swiftSettings: strictSettings
    ),
]

// MARK: - System libraries

targets += [
    .systemLibrary(name: "CBlueZ", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),
    .systemLibrary(name: "CGPS", pkgConfig: "libgps", providers: [.apt(["libgps-dev"])]),
    .testTarget(name: "SystemLibraryTests", dependencies: ["CBlueZ", "CGPS"], swiftSettings: strictSettings),
]

// MARK: - SOS dispatch: the I/O shell around TrackMeCore's DispatchPolicy.

targets += [
    .target(
        name: "EdgeDispatch",
        dependencies: ["TrackMeCore", "TrackMeSystem", .product(name: "Logging", package: "swift-log")],
        swiftSettings: strictSettings
    ),
    .testTarget(name: "EdgeDispatchTests", dependencies: ["EdgeDispatch", "TrackMeCore"], swiftSettings: strictSettings),
]

// MARK: - BLE heart rate

// BlueZHeartRate: sans-I/O HRM/ATT/HCI bytes, the ATT client, the link supervisor, and the thin
// L2CAP/HCI socket shells over libbluetooth. SimulatedStrap: a GATT server speaking real ATT over a
// socket pair, for tests and the simulation harness.
targets += [
    .target(
        name: "BlueZHeartRate",
        dependencies: [
            "TrackMeCore", "TrackMeSystem", "CBlueZ",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "SystemPackage", package: "swift-system"),
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

// MARK: - BLE in a VM

// The btmon captures under Tests/BlueZHeartRateTests/Fixtures are data for CapturedBytesTests
// (read from the source tree), not sources or resources. hardware/BLE-VM.md tells where they came from.
for index in targets.indices where targets[index].name == "BlueZHeartRateTests" {
    targets[index].exclude.append("Fixtures")
}

// MARK: - GPS position

// CGPSShim owns libgps's 24 KB, version-dependent `gps_data_t` and hands Swift a flat struct;
// GPSDPosition is the reader (its own thread, reconnects); GPSDTestSupport starts the real gpsd on
// a loopback feed or under gpsfake, for the tests here and the simulation harness.
targets += [
    .target(name: "CGPSShim", dependencies: ["CGPS"]),
    .target(
        name: "GPSDPosition",
        dependencies: [
            "CGPSShim", "TrackMeCore", "TrackMeSystem",
            .product(name: "Logging", package: "swift-log"),
        ],
        swiftSettings: strictSettings
    ),
    .target(
        name: "GPSDTestSupport",
        dependencies: ["TrackMeCore", "TrackMeSystem", .product(name: "SystemPackage", package: "swift-system")],
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "GPSDPositionTests",
        dependencies: ["GPSDPosition", "GPSDTestSupport", "TrackMeCore"],
        swiftSettings: strictSettings
    ),
]

// MARK: - Store and sync

// EdgeStore: durable buffer (SQLite through GRDB), disk budget, sync cursor, alert journal.
// EdgeSync: batching, gzip (GzipCodec: system zlib, no NIO on the agent side), retries, two lanes.
targets += [
    .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
    // The wire's gzip, one implementation for the agent's sync client and the server.
    .target(name: "GzipCodec", dependencies: ["CZlib"], swiftSettings: strictSettings),
    .target(
        name: "EdgeStore",
        dependencies: [
            "TrackMeCore", "CZlib",
            .product(name: "GRDB", package: "GRDB.swift"),
            // ChaChaPoly over each row body (readings, alert journal, device token).
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ],
        swiftSettings: strictSettings
    ),
    // one HTTPS POST through libcurl with a CA file and key pins; the agent's
    // one HTTP client (kept-alive handles), so the agent no longer links FoundationNetworking.
    .target(name: "CCurlShim", linkerSettings: [.linkedLibrary("curl")]),
    .target(
        name: "EdgeSync",
        dependencies: [
            "TrackMeCore", "TrackMeSystem", "EdgeStore", "GzipCodec", "CCurlShim",
            .product(name: "Logging", package: "swift-log"),
        ],
        swiftSettings: strictSettings
    ),
    .target(
        name: "EdgeBenchmarks",
        dependencies: [
            "TrackMeCore", "EdgeStore", "EdgeSync", "GzipCodec",
            .product(name: "GRDB", package: "GRDB.swift"),
        ],
        swiftSettings: strictSettings
    ),
    .executableTarget(
        name: "store-crash-child",
        dependencies: ["TrackMeCore", "EdgeStore", "EdgeSync", "EdgeBenchmarks"],
        path: "Tests/StoreCrashChild",
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "EdgeStoreTests",
        dependencies: [
            "TrackMeCore", "EdgeStore", "EdgeBenchmarks", .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
        ],
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "EdgeSyncTests",
        dependencies: [
            "TrackMeCore", "TrackMeSystem", "EdgeStore", "EdgeSync", "EdgeBenchmarks", "store-crash-child", "GzipCodec",
            // the real server behind a fault-injecting proxy (no second server).
            "ServerTestSupport", "TrackMeServer",
            .product(name: "Logging", package: "swift-log"),
        ],
        swiftSettings: strictSettings
    ),
]

// MARK: - Server

// The PostgreSQL backend is behind the package trait "PostgreSQL" (`swift build --traits
// PostgreSQL`) so that the default build neither fetches nor compiles postgres-nio.
targets += [
    .target(
        name: "TrackMeServer",
        dependencies: [
            "TrackMeCore",
            "TrackMeSystem",
            .product(name: "SystemPackage", package: "swift-system"),
            "GzipCodec",
            .product(name: "Hummingbird", package: "hummingbird"),
            // the connection guard (child channel, deadline handler after the decoder)
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
            .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
            // SHA-256 and HMAC of tokens, batch digests and contact links (was a hand-written copy).
            .product(name: "Crypto", package: "swift-crypto"),
            // The device store's key file format and row cipher, for the per-person data keys.
            "EdgeStore",
            // The metrics, as the agent's: swift-metrics values in a swift-prometheus registry.
            .product(name: "CoreMetrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ],
        // The API document is a file, compiled into the binary (no resource bundle to ship beside
        // it) and served byte for byte at /openapi.yaml; so are the pages, their scripts and their
        // one stylesheet (Pages/WebPages.swift says how a page is put together).
        resources: [
            .embedInCode("openapi.yaml"), .embedInCode("Pages/head.html"), .embedInCode("Pages/trackme.css"), .embedInCode("Pages/protection.js"),
            .embedInCode("Console/console.html"), .embedInCode("Console/console.js"),
            .embedInCode("People/people.html"), .embedInCode("People/people.js"),
            .embedInCode("Fleet/fleet.html"), .embedInCode("Fleet/fleet.js"),
            .embedInCode("Races/race.html"), .embedInCode("Races/race.js"),
            .embedInCode("Races/runs.html"), .embedInCode("Races/runs.js"),
            .embedInCode("Races/organise.html"), .embedInCode("Races/organise.js"),
            .embedInCode("Accounts/account.html"), .embedInCode("Accounts/account.js"),
            .embedInCode("Contacts/contact.html"), .embedInCode("Contacts/contact.js"),
        ],
        swiftSettings: strictSettings
    ),
    // the real server started in-process on loopback (the one starter, for the server's
    // tests, the agent's sync tests and `bench drain`) and a fault-injecting proxy in front of it;
    // uses the agent's socket layer. Never linked by the agent.
    .target(
        name: "ServerTestSupport",
        dependencies: [
            "TrackMeServer", "TrackMeCore", "TrackMeSystem", "EdgeSync", "TrackMeAgent",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
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
            "TrackMeServer", "TrackMeCore", "TrackMeSystem", "CZlib", "GzipCodec", "ServerTestSupport",
            .product(name: "SystemPackage", package: "swift-system"),
            // the agent's transports against the HTTPS server.
            "EdgeSync",
            // the group-commit tests reach into the SQLite store.
            .product(name: "GRDB", package: "GRDB.swift"),
            // the agent's store and sync engine failing over between instances.
            "EdgeStore",
            // the CLI and the descriptor-limit test run the real binary.
            "trackme-server",
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            // The served API document is read with a YAML reader that refuses duplicate keys.
            .product(name: "Yams", package: "Yams"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
        ],
        swiftSettings: strictSettings
    ),
]

// MARK: - SOS button

// CInputShim reads `struct input_event`s from /dev/input/eventN (gpio-keys) behind a flat C API.
targets += [.target(name: "CInputShim")]

// MARK: - Agent

// The daemon's shell: configuration, service lifecycle, status socket, logging, metrics, systemd.
// The pipeline (BLE, gpsd, SOS, store, sync) is wired in as `Service`s through `AgentDaemon`.
targets += [
    .target(
        name: "TrackMeAgent",
        dependencies: [
            "TrackMeCore", "TrackMeSystem", "BlueZHeartRate", "GPSDPosition", "EdgeStore", "EdgeSync", "EdgeDispatch", "CInputShim",
            // The socket-pair strap (`strap.transport: socketpair`) for tests and demos; no NIO.
            "SimulatedStrap",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "CoreMetrics", package: "swift-metrics"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            .product(name: "Yams", package: "Yams"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "SystemPackage", package: "swift-system"),
        ],
        exclude: ["WIRING.md"],
        swiftSettings: strictSettings
    ),
    .testTarget(
        name: "TrackMeAgentTests",
        dependencies: [
            "TrackMeAgent",
            "TrackMeCore",
            "TrackMeSystem",
            .product(name: "SystemPackage", package: "swift-system"),
            // The end-to-end test: a real gpsd, a loopback server, and the store reopened after.
            "TrackMeServer", "ServerTestSupport", "GPSDTestSupport", "EdgeStore", "EdgeSync", "EdgeBenchmarks",
            // The button test writes real `struct input_event`s into a FIFO.
            "CInputShim",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            .product(name: "Prometheus", package: "swift-prometheus"),
        ],
        swiftSettings: strictSettings
    ),
    .executableTarget(
        name: "trackme-agent",
        dependencies: [
            "TrackMeAgent",
            "TrackMeCore",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            "BlueZHeartRate",
            "GPSDPosition",
            .product(name: "SystemPackage", package: "swift-system"),
        ],
        swiftSettings: strictSettings
    ),
]

// MARK: - Simulation

targets += [
    .target(
        name: "TrackMeSimulation",
        dependencies: [
            "TrackMeCore", "TrackMeAgent", "BlueZHeartRate", "SimulatedStrap", "EdgeStore", "EdgeSync", "EdgeDispatch",
            "TrackMeServer", "GPSDPosition", "GPSDTestSupport", "ServerTestSupport", "EdgeBenchmarks", "TrackMeSystem",
            .product(name: "SystemPackage", package: "swift-system"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            // The server benchmarks' own keep-alive connections (`BenchHTTPConnection`, `bench load`).
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            // Fast mode: the server's router in process, without a socket, its requests' context
            // on one testing channel (`InProcessRouter`).
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ],
        swiftSettings: strictSettings
    ),
    .testTarget(name: "TrackMeSimulationTests", dependencies: ["TrackMeSimulation"], swiftSettings: strictSettings),
    .executableTarget(
        name: "trackme-sim",
        dependencies: [
            "TrackMeSimulation",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            "EdgeBenchmarks",
            // `bench store --encryption` makes its StoreKey
            "EdgeStore",
            // server benchmark
            "TrackMeServer", "TrackMeCore", "TrackMeSystem",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            // `bench server --tls`
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
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
        .trait(name: "PostgreSQL", description: "The server's PostgreSQL storage backend (postgres-nio).")
    ],
    dependencies: [
        // MARK: agent-side packages (no NIO here: the agent stays light on a Pi)
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        // the store's per-row AEAD (no NIO; BoringSSL's C compiled in, as on the server)
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        // FileDescriptor and Errno, the one system-call layer (already in the graph)
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        // MARK: server-side packages
        // Prometheus text rendering; NIO-free (swift-atomics + CoreMetrics only)
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // server
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // NIOHTTPTypes (already in the graph through hummingbird)
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // the server's native TLS (BoringSSL; already in the graph through hummingbird)
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // simulation: fast mode's HTTP client (keep-alive on loopback; the agent keeps URLSession)
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: targets,
    swiftLanguageModes: [.v6]
)
