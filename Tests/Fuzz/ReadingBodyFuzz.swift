// libFuzzer entry for the store's reading body codec (built by run-fuzz.sh). Properties: no
// input traps; whatever decodes re-encodes to bytes that decode and re-encode to the very same
// bytes (compared as bytes, so a NaN that came in raw is compared by its bits).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzReadingBody(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let decoded = try? ReadingBodyCodec.decode(bytes) {
        let encoded = ReadingBodyCodec.encode(decoded.payload, wallClockTrusted: decoded.wallClockTrusted)
        let again = try? ReadingBodyCodec.decode(encoded)
        precondition(
            again.map { ReadingBodyCodec.encode($0.payload, wallClockTrusted: $0.wallClockTrusted) } == encoded,
            "re-encoded body decodes differently"
        )
    }
    return 0
}
