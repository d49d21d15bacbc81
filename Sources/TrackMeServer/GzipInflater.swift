import CZlib

/// Inflates a gzip body with a hard cap on the inflated size, checked while inflating, so a
/// gzip bomb (a few KB that would inflate to gigabytes) is refused after `limit` bytes of
/// output, not after the memory is gone.
enum GzipInflater {
    enum Failure: Error, Equatable {
        /// The inflated body would be larger than the limit.
        case tooLarge
        /// Not a valid gzip stream (zlib's message, if it had one).
        case corrupt(String)
    }

    static func inflate(_ input: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        // 16 + MAX_WBITS: expect a gzip header and trailer, not a raw zlib stream.
        let initResult = inflateInit2_(&stream, 16 + MAX_WBITS, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard initResult == Z_OK else { throw .corrupt("inflateInit2 failed (\(initResult))") }
        defer { inflateEnd(&stream) }

        var output: [UInt8] = []
        let chunkSize = 64 * 1024
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        var input = input
        let inputCount = input.count
        return try input.withUnsafeMutableBufferPointer { (inputBuffer) throws(Failure) -> [UInt8] in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = UInt32(inputCount)
            while true {
                let (status, produced) = chunk.withUnsafeMutableBufferPointer { chunkBuffer -> (Int32, Int) in
                    stream.next_out = chunkBuffer.baseAddress
                    stream.avail_out = UInt32(chunkSize)
                    let status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return (status, chunkSize - Int(stream.avail_out))
                }
                if output.count + produced > limit { throw .tooLarge }
                output.append(contentsOf: chunk[0..<produced])
                switch status {
                case Z_STREAM_END:
                    return output
                case Z_OK:
                    continue
                case Z_BUF_ERROR where stream.avail_in == 0:
                    throw .corrupt("truncated gzip stream")
                default:
                    let message = stream.msg.map { String(cString: $0) } ?? "inflate failed (\(status))"
                    throw .corrupt(message)
                }
            }
        }
    }
}
