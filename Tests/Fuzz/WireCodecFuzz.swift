// libFuzzer entry for the server's wire decoders (WireCodec over the batch, alert, conflict and
// heartbeat JSON; built by run-fuzz.sh, not by SwiftPM). Properties: no input traps; a batch
// that decodes re-encodes to JSON that decodes to the same batch.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWireCodec(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = Data(UnsafeRawBufferPointer(start: start, count: count))
    if let batch = try? WireCodec.decode(SyncBatch.self, from: data), let again = try? WireCodec.encode(batch) {
        // NaN never decodes from JSON, so equality holds for everything that decoded.
        precondition((try? WireCodec.decode(SyncBatch.self, from: again)) == batch, "re-encoded batch decodes differently")
    }
    _ = try? WireCodec.decode(AlertUpdate.self, from: data)
    _ = try? WireCodec.decode(BatchConflict.self, from: data)
    _ = try? WireCodec.decode(HeartbeatMessage.self, from: data)
    _ = try? WireCodec.decode(BatchAcknowledgement.self, from: data)
    return 0
}
