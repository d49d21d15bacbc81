// libFuzzer entry for the wire's gzip inflater (GzipCodec, agent and server) (built by run-fuzz.sh). Properties: no input
// traps or overflows; the output never exceeds the limit.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGzipInflater(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    if let output = try? Gzip.decompress(bytes, limit: 1 << 16) {
        precondition(output.count <= 1 << 16, "inflated past the limit")
    }
    return 0
}
