import Foundation
import Testing
import TrackMeCore

@testable import GPSDPosition

/// One line from gpsd through libgps's parser and the shim (`GPSDConnection.report(line:)`, the
/// same code a read runs), without a connection.
@Suite("gpsd lines", .timeLimit(.minutes(10)))
struct GPSDLineTests {
    /// Parses on a thread of its own and gives up after `limit`: libgps 3.22 never returns on
    /// some lines, and a regression must fail here rather than hang the test run.
    static func report(_ line: String, within limit: Duration = .seconds(10)) async -> GPSDReport?? {
        let bytes = Array(line.utf8)
        return await withTaskGroup(of: GPSDReport??.self) { group in
            group.addTask {
                await withCheckedContinuation { done in
                    Thread { done.resume(returning: .some(GPSDConnection.report(line: bytes))) }.start()
                }
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    @Test("a TPV, a DEVICE and a DEVICES list as gpsd 3.22 sends them")
    func realLines() async throws {
        let tpv = await Self.report(
            #"{"class":"TPV","device":"/dev/ttyACM0","mode":3,"time":"2024-01-01T00:00:02.000Z","lat":45.478,"lon":9.2275,"altHAE":120.5,"eph":4.2}"#
        )
        guard case .tpv(let fix)?? = tpv else {
            Issue.record("not a TPV: \(String(describing: tpv))")
            return
        }
        #expect(fix.mode == .threeDimensional)
        #expect(fix.time == "2024-01-01T00:00:02.000Z")
        #expect(fix.latitude == 45.478 && fix.longitude == 9.2275 && fix.altitudeHAE == 120.5 && fix.horizontalError == 4.2)
        #expect(fix.speed == nil)
        let devices = await Self.report(
            #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/ttyACM0","driver":"u-blox","activated":"2024-01-01T00:00:00.000Z"},{"class":"DEVICE","path":"/dev/ttyUSB0","activated":"2024-01-01T00:00:00.000Z"}]}"#
        )
        #expect(devices == .some(.some(.devices(count: 2))))
        #expect(await Self.report(#"{"class":"DEVICES","devices":[]}"#) == .some(.some(.devices(count: 0))))
        #expect(await Self.report(#"{"class":"DEVICE","path":"/dev/ttyACM0","activated":0}"#) == .some(.some(.device(activated: false))))
    }

    /// Found by the gpsd-report fuzzer: libgps 3.22's `gps_unpack` loops for ever on a line with
    /// a second `"class"` member, which hung the reader's thread (no fix, no reconnect, ever).
    /// The shim no longer hands such lines to libgps; the reader goes on with the next line.
    @Test(
        "a line with a nested class does not hang the reader",
        arguments: [
            #"{"class":"TPV","x":[{"class":"DEVICE"}]}"#,
            #"{"class":"TPV","mode":3,"lat":1,"lon":2,"alvices":[{"class":"DEVICE","path":"/dev/ttyACM0"}]}"#,
            #"{"class":"SKY","x":[{"class":"DEVICE"}]}"#,
            #"{"class":"DEVICES","devices":[{"class":"TPV","path":"/dev/a"}]}"#,
            #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/a"}],"x":[{"class":"DEVICE"}]}"#,
        ]
    )
    func nestedClass(line: String) async {
        let report = await Self.report(line)
        #expect(report != nil, "gps_unpack did not return within 10 s")
        if case .tpv(let fix)?? = report { #expect(fix.mode < .twoDimensional, "a line libgps did not parse gave a fix") }
    }
}
