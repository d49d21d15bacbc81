import CZlib

/// gzip (RFC 1952) through the system zlib, for request bodies (`Content-Encoding: gzip`).
/// The agent side links zlib directly instead of NIO's compression packages, to stay light.
public enum Gzip {
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// zlib's return code (`Z_DATA_ERROR`, `Z_MEM_ERROR`, ...).
        public var zlibCode: Int32
        public var operation: String
        public var description: String { "gzip \(operation) failed (zlib \(zlibCode))" }
    }

    /// Compresses `input` into a gzip member. Level 6 (zlib's default) is the knee of the
    /// size/CPU curve for JSON on a Pi.
    public static func compress(_ input: [UInt8], level: Int32 = 6) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        let initCode = trackme_deflate_init_gzip(&stream, level)
        guard initCode == Z_OK else { throw Failure(zlibCode: initCode, operation: "deflateInit") }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(input.count))) + 32
        var output = [UInt8](repeating: 0, count: bound)
        var input = input
        let code = input.withUnsafeMutableBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = inBuf.baseAddress
                stream.avail_in = uInt(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = uInt(outBuf.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard code == Z_STREAM_END else { throw Failure(zlibCode: code, operation: "deflate") }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }

    /// Decompresses one gzip member, refusing to produce more than `limit` bytes (a zip bomb
    /// must not exhaust memory).
    public static func decompress(_ input: [UInt8], limit: Int = 64 << 20) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        let initCode = trackme_inflate_init_gzip(&stream)
        guard initCode == Z_OK else { throw Failure(zlibCode: initCode, operation: "inflateInit") }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var input = input
        var code: Int32 = Z_OK
        input.withUnsafeMutableBufferPointer { inBuf in
            stream.next_in = inBuf.baseAddress
            stream.avail_in = uInt(inBuf.count)
            while code == Z_OK {
                let produced = chunk.withUnsafeMutableBufferPointer { outBuf -> Int in
                    stream.next_out = outBuf.baseAddress
                    stream.avail_out = uInt(outBuf.count)
                    code = inflate(&stream, Z_NO_FLUSH)
                    return outBuf.count - Int(stream.avail_out)
                }
                output.append(contentsOf: chunk[0..<produced])
                if output.count > limit { code = Z_BUF_ERROR }
                if code == Z_OK, produced == 0, stream.avail_in == 0 { code = Z_DATA_ERROR }
            }
        }
        guard code == Z_STREAM_END else { throw Failure(zlibCode: code, operation: "inflate") }
        return output
    }
}
