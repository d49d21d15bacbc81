// libFuzzer entry for the Heart Rate Measurement decoder (built by run-fuzz.sh, not by SwiftPM).
// Properties: no input traps; whatever decodes re-encodes to bytes that decode to the same reading.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHeartRateMeasurement(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let reading = try? HeartRateMeasurement.decode(bytes) {
        let again = try? HeartRateMeasurement.decode(HeartRateMeasurement.encode(reading, maximumLength: Int.max))
        precondition(again == reading, "re-encoded measurement decodes differently")
    }
    _ = try? BodySensorLocation.decode(bytes)
    _ = try? BatteryLevel.decode(bytes)
    return 0
}
