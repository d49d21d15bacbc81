import CZlib
import Foundation

/// Test-side gzip: compresses `total` bytes produced `chunk` at a time, so a gzip bomb of
/// hundreds of megabytes is made without holding them in memory.
enum Gzip {
    struct Failure: Error {}

    static func compress(_ data: Data) throws -> Data {
        try compress(total: data.count, chunk: max(data.count, 1)) { offset, count in Array(data[offset..<(offset + count)]) }
    }

    /// A gzip stream of `total` zero bytes.
    static func zeros(total: Int) throws -> Data {
        let block = [UInt8](repeating: 0, count: 1 << 20)
        return try compress(total: total, chunk: block.count) { _, count in Array(block[0..<count]) }
    }

    private static func compress(total: Int, chunk: Int, produce: (Int, Int) -> [UInt8]) throws -> Data {
        var stream = z_stream()
        guard deflateInit2_(&stream, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else { throw Failure() }
        defer { deflateEnd(&stream) }
        var output = Data()
        var out = [UInt8](repeating: 0, count: 1 << 16)
        var offset = 0
        repeat {
            let count = min(chunk, total - offset)
            var input = produce(offset, count)
            offset += count
            let flush = offset >= total ? Z_FINISH : Z_NO_FLUSH
            let inputCount = input.count
            var status: Int32 = Z_OK
            input.withUnsafeMutableBufferPointer { inputBuffer in
                stream.next_in = inputBuffer.baseAddress
                stream.avail_in = UInt32(inputCount)
                repeat {
                    out.withUnsafeMutableBufferPointer { outBuffer in
                        stream.next_out = outBuffer.baseAddress
                        stream.avail_out = UInt32(outBuffer.count)
                        status = deflate(&stream, flush)
                        if let base = outBuffer.baseAddress { output.append(base, count: outBuffer.count - Int(stream.avail_out)) }
                    }
                } while stream.avail_out == 0
            }
            guard status != Z_STREAM_ERROR else { throw Failure() }
        } while offset < total
        return output
    }
}
