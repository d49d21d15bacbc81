import Foundation
import Testing

@testable import TrackMeSimulation

/// Recorded rides in the Porto taxi data set's format: what is replayed, what is skipped and why.
@Suite struct RecordedTripsTests {
    static let header = #""TRIP_ID","CALL_TYPE","ORIGIN_CALL","ORIGIN_STAND","TAXI_ID","TIMESTAMP","DAY_TYPE","MISSING_DATA","POLYLINE""#

    @Test func quotedRowsAreRidesAndBadOnesAreSkippedByReasonNeverFatal() throws {
        let csv = [
            Self.header,
            #""T1","C","","","20000001","1372636800","A","False","[[-8.61,41.15],[-8.611,41.151],[-8.612,41.152]]""#,
            // The same taxi a minute after its drop-off (30 s after start + 60 s).
            #""T2","A","2002","","20000001","1372636890","A","False","[[-8.62,41.16],[-8.621,41.161]]""#,
            #""T3","C","","","20000002","1372636800","A","True","[[-8.61,41.15],[-8.611,41.151]]""#,
            #""T4","B","","15","20000002","1372636810","A","False","[]""#,
            #""T5","B","","15","20000002","1372636820","A","False","[[-8.61,41.15],[-8.612""#,
            #""T6","B","","15","20000002","1372636830","A","False","[[-8.61,41.15]]""#,
            #""T7","C","","","20000002","not-a-time","A","False","[[-8.61,41.15],[-8.611,41.151]]""#,
            #""T8","C","","","20000002","1372636840","A","False","[[-8.61,141.15],[-8.611,41.151]]""#,
            #""T9","C""#,
            // Starts before T1 ends: one ride at a time.
            #""T10","C","","","20000001","1372636815","A","False","[[-8.61,41.15],[-8.611,41.151]]""#,
            "",
        ].joined(separator: "\r\n")
        let trips = try RecordedTrips(csv: csv)
        #expect(trips.rows == 10)
        #expect(trips.trips.map(\.tripID) == ["T1", "T2"])
        let first = try #require(trips.trips.first)
        #expect(first.start == 1_372_636_800 && first.end == 1_372_636_830)
        #expect(first.points.first == RecordedTrips.Point(latitude: 41.15, longitude: -8.61))
        #expect(trips.skipped[.missingData] == 1)
        #expect(trips.skipped[.emptyPolyline] == 2)
        #expect(trips.skipped[.badPolyline] == 2)
        #expect(trips.skipped[.badRow] == 2)
        #expect(trips.skipped[.overlapping] == 1)
    }

    @Test func columnsAreFoundByNameAndAMissingOneIsAClearError() throws {
        let reordered = "TAXI_ID,TRIP_ID,POLYLINE,TIMESTAMP,MISSING_DATA\n7,X,\"[[1,2],[1.001,2.001]]\",100,False\n"
        let trips = try RecordedTrips(csv: reordered)
        #expect(trips.trips.map(\.taxiID) == ["7"])
        #expect(trips.trips.first?.points.last == RecordedTrips.Point(latitude: 2.001, longitude: 1.001))
        #expect(throws: RecordedTrips.FormatError.self) { try RecordedTrips(csv: "TRIP_ID,TAXI_ID,TIMESTAMP\n") }
    }

    @Test func theSampleInTheRepositoryHoldsWhatItsNoticeSays() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("simulations/traces/fleet/porto-sample.csv")
        let trips = try RecordedTrips(csv: String(contentsOf: url, encoding: .utf8))
        #expect(trips.trips.count == 30)
        #expect(trips.skipped[.missingData] == 1 && trips.skipped[.emptyPolyline] == 1 && trips.skipped[.badPolyline] == 1)
        let jumps = trips.trips.reduce(0) { $0 + CrowdRunner.jumpPoints($1, limit: FleetJudge.jumpMetresPerSecond).count }
        #expect(jumps > 0)
        let byTaxi = Dictionary(grouping: trips.trips, by: \.taxiID).values.map { $0.sorted { $0.start < $1.start } }
        let backToBack = byTaxi.reduce(0) { count, rides in count + zip(rides, rides.dropFirst()).filter { $1.start - $0.end <= 60 }.count }
        #expect(backToBack > 0)
    }
}
