// libFuzzer entry for the control socket's messages (ControlCodec over ControlRequest, which the
// agent reads from any local client, and ControlResponse, which the CLI reads back; built by
// run-fuzz.sh). Properties: no input traps; whatever decodes re-encodes to one line that decodes
// to the same value.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzControlMessage(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let line = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let request = try? ControlCodec.decode(ControlRequest.self, from: line) {
        guard let again = try? ControlCodec.encodeLine(request) else { preconditionFailure("a decoded request does not encode") }
        precondition(again.firstIndex(of: 0x0A) == again.count - 1, "an encoded request is not one line")
        precondition((try? ControlCodec.decode(ControlRequest.self, from: Array(again.dropLast()))) == request, "request round trip differs")
    }
    if let response = try? ControlCodec.decode(ControlResponse.self, from: line) {
        guard let again = try? ControlCodec.encodeLine(response) else { preconditionFailure("a decoded response does not encode") }
        precondition(again.firstIndex(of: 0x0A) == again.count - 1, "an encoded response is not one line")
        precondition((try? ControlCodec.decode(ControlResponse.self, from: Array(again.dropLast()))) == response, "response round trip differs")
    }
    return 0
}
