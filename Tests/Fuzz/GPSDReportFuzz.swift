// libFuzzer entry for the gpsd report path (built by run-fuzz.sh): every line of the input goes
// through libgps's own JSON parser and the shim's copy as a line read from gpsd would
// (`GPSDConnection.report(line:)`, i.e. `tm_gps_unpack`), then into the reader's state machine.
// Properties: no input traps; a TPV with a 2D/3D fix is published as that fix and leaves the
// state at its mode; every published fix goes to the server as a reading that encodes and
// decodes back to itself (no NaN or infinity slips through as "present").
import CGPSShim
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGPSDReport(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    var machine = GPSDStateMachine(backoff: Backoff.gpsdReconnect, reconnects: true)
    _ = machine.receive(.connected, now: .zero)
    for (index, line) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
        guard let report = GPSDConnection.report(line: Array(line)) else { continue }
        let (events, _) = machine.receive(.report(report), now: .seconds(index))
        guard case .tpv(let fix) = report, fix.mode >= .twoDimensional else { continue }
        precondition(events.last == .fix(fix), "a 2D/3D TPV was not published as its fix")
        precondition(machine.state == .fix(fix.mode), "a 2D/3D TPV left the state at \(String(describing: machine.state))")
        let reading = WireReading(
            sequence: 1,
            timestamp: ReadingTimestamp(monotonicNanoseconds: 1, bootID: "fuzz", wallClockMilliseconds: nil, wallClockTrusted: false),
            payload: .position(fix)
        )
        guard let encoded = try? WireCodec.encode(reading) else { preconditionFailure("a published fix does not encode: \(fix)") }
        precondition((try? WireCodec.decode(WireReading.self, from: encoded)) == reading, "a published fix does not decode back: \(fix)")
    }
    return 0
}
