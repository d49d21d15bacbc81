// libFuzzer entry for the server's wire decoders (WireCodec over the batch, alert, conflict and
// heartbeat JSON; built by run-fuzz.sh, not by SwiftPM). Properties: no input traps; a batch
// that decodes re-encodes to JSON that decodes to the same batch; the server's fast path
// (WireFastPath) decodes nothing WireCodec refuses and nothing to another value, and its
// canonical text of a reading, heartbeat or whole batch is JSONEncoder's byte for byte.
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWireCodec(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = Data(UnsafeRawBufferPointer(start: start, count: count))
    let general = try? WireCodec.decode(SyncBatch.self, from: data)
    if let fast = WireFastPath.syncBatch([UInt8](data)) {
        precondition(fast == general, "fast path decoded what WireCodec did not, or to another value")
        for reading in fast.readings {
            if let text = WireFastPath.canonicalJSON(reading) {
                precondition((try? WireCodec.encode(reading)) == Data(text.utf8), "canonical reading text differs")
            }
        }
        if let heartbeat = fast.heartbeat, let text = WireFastPath.canonicalJSON(heartbeat) {
            precondition((try? WireCodec.encode(heartbeat)) == Data(text.utf8), "canonical heartbeat text differs")
        }
        if let text = WireFastPath.canonicalJSON(fast) {
            // Against JSONEncoder itself: WireCodec.encode(batch) takes this fast path.
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            precondition((try? encoder.encode(fast)) == Data(text.utf8), "canonical batch text differs")
        }
    }
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
