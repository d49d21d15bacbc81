import Foundation
import Testing
import TrackMeCore

@testable import EdgeStore

/// The agent's small values across restarts (issue 19): the learned resting rate and pause.
@Suite("Device state")
struct DeviceStateTests {
    @Test("a value survives closing and reopening the store file; a new value replaces it")
    func survivesReopen() throws {
        let directory = try TemporaryDirectory()
        var estimator = RestingHeartRateEstimator(minimumSamples: 3)
        for bpm in [52, 55, 61] { estimator.add(HeartRateReading(bpm: bpm, contact: .detected)) }
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: directory.storePath), logger: quiet)
            #expect(try store.deviceState(ReadingStore.DeviceStateKey.restingHeartRate) == nil)
            try store.setDeviceState(Data("1".utf8), for: ReadingStore.DeviceStateKey.monitoringPaused)
            try store.setDeviceState(try JSONEncoder().encode(estimator), for: ReadingStore.DeviceStateKey.restingHeartRate)
            try store.setDeviceState(Data("0".utf8), for: ReadingStore.DeviceStateKey.monitoringPaused)
            store.close()
        }
        let reopened = try ReadingStore(configuration: StoreConfiguration(path: directory.storePath), logger: quiet)
        defer { reopened.close() }
        let data = try #require(try reopened.deviceState(ReadingStore.DeviceStateKey.restingHeartRate))
        #expect(try JSONDecoder().decode(RestingHeartRateEstimator.self, from: data) == estimator)
        #expect(try reopened.deviceState(ReadingStore.DeviceStateKey.monitoringPaused) == Data("0".utf8))
    }

    @Test("the contacts the fallback told of the last alert survive reopening; another alert's list replaces them")
    func contactsToldSurviveReopen() throws {
        let directory = try TemporaryDirectory()
        let at = ReadingTimestamp(monotonicNanoseconds: 180_000_000_000, bootID: "b", wallClockMilliseconds: nil, wallClockTrusted: false)
        let told = [ContactTold(contactIndex: 0, at: at, path: .localFallback), ContactTold(contactIndex: 1, at: at, path: .localFallback)]
        do {
            let store = try ReadingStore(configuration: StoreConfiguration(path: directory.storePath), logger: quiet)
            #expect(try store.contactsTold(alertID: "a-1").isEmpty)
            try store.setContactsTold(Array(told.prefix(1)), alertID: "a-1")
            try store.setContactsTold(told, alertID: "a-1")
            store.close()
        }
        let reopened = try ReadingStore(configuration: StoreConfiguration(path: directory.storePath), logger: quiet)
        defer { reopened.close() }
        #expect(try reopened.contactsTold(alertID: "a-1") == told)
        #expect(try reopened.contactsTold(alertID: "a-2").isEmpty, "another alert's contacts are not these")
        try reopened.setContactsTold(Array(told.suffix(1)), alertID: "a-2")
        #expect(try reopened.contactsTold(alertID: "a-1").isEmpty)
        #expect(try reopened.contactsTold(alertID: "a-2") == Array(told.suffix(1)))
    }

    @Test("a write the disk refuses is a store error, not a silent loss")
    func refusedWrite() throws {
        let directory = try TemporaryDirectory()
        let store = try ReadingStore(configuration: StoreConfiguration(path: directory.storePath), logger: quiet)
        defer { store.close() }
        try store.simulate(.readOnly)
        #expect(throws: StoreError.self) { try store.setDeviceState(Data("1".utf8), for: ReadingStore.DeviceStateKey.monitoringPaused) }
    }
}
