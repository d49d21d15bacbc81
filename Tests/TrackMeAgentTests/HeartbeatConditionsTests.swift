import EdgeStore
import Foundation
import Logging
import Testing
import TrackMeCore

@testable import TrackMeAgent

/// How long each condition that leaves the wearer less protected has held (`conditions_for_s`),
/// on the heartbeat's injected clock.
@Suite("heartbeat: how long each condition has held")
struct HeartbeatConditionsTests {
    @Test("paused, strap battery low, device battery low and charging each count from their start; a condition that ends leaves")
    func durations() throws {
        let clock = VirtualClock()
        let state = AgentStateCell.testing(clock: clock)
        #expect(state.heartbeat().conditionSeconds == nil, "nothing holds")
        state.update { $0.record(openAlert: nil, monitoring: false, actions: [], at: $1) }
        clock.advance(by: .seconds(90))
        state.update { $0.record(openAlert: nil, monitoring: false, actions: [], at: $1) }
        state.update { $0.record(strapBattery: 10, at: $1) }
        state.update { $0.record(power: DevicePower(percent: 12, source: .battery), level: .low, at: $1) }
        clock.advance(by: .seconds(30))
        var beat = state.heartbeat()
        #expect(beat.conditionSeconds == ["monitoring_paused": 120, "strap_battery_low": 30, "device_battery_low": 30], "a repeat keeps the start")
        state.update { $0.record(openAlert: nil, monitoring: true, actions: [], at: $1) }
        state.update { $0.record(strapBattery: 80, at: $1) }
        state.update { $0.record(power: DevicePower(percent: 13, source: .charging), level: .normal, at: $1) }
        clock.advance(by: .seconds(5))
        beat = state.heartbeat()
        #expect(beat.conditionSeconds == ["charging": 5])
        let json = String(decoding: try WireCodec.encode(beat), as: UTF8.self)
        #expect(json.contains(#""conditions_for_s":{"charging":5}"#), "\(json)")
        #expect(try WireCodec.decode(DeviceHeartbeat.self, from: Data(json.utf8)) == beat)
    }

    @Test("a store in memory only and quarantined readings count from when the heartbeat first saw them")
    func storeConditions() throws {
        let directory = try TemporaryDirectory()
        let store = try ReadingStore(configuration: StoreConfiguration(path: directory.file("store.sqlite")), logger: Logger(label: "test"))
        defer { store.close() }
        let clock = VirtualClock()
        let state = AgentStateCell.testing(clock: clock)
        var stats = store.statistics()
        #expect(state.heartbeat(store: stats).conditionSeconds == nil, "a healthy store on disk")
        stats.memoryOnlyReason = "read_only: the disk refused the store"
        _ = state.heartbeat(store: stats)
        clock.advance(by: .seconds(200))
        stats.quarantinedReadings = 3
        _ = state.heartbeat(store: stats)
        clock.advance(by: .seconds(40))
        #expect(state.heartbeat(store: stats).conditionSeconds == ["store_memory_only": 240, "quarantined": 40])
        #expect(state.heartbeat().conditionSeconds == ["store_memory_only": 240, "quarantined": 40], "without statistics the last stand")
        stats.memoryOnlyReason = nil
        #expect(state.heartbeat(store: stats).conditionSeconds == ["quarantined": 40], "back on disk")
    }
}
