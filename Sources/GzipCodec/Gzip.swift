import CZlib

/// Data path: the wire's compression, for both ends. The agent's sync client gzips each batch
/// (`Content-Encoding: gzip`); the server inflates request bodies with a hard cap on the
/// inflated size. One implementation over the system zlib (no NIO compression package, so the
/// agent stays light), instead of one copy on each side.
public enum Gzip {
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// The inflated body would be larger than the limit (a gzip bomb, or simply too big).
        public var tooLarge: Bool
        /// zlib's return code (`Z_DATA_ERROR`, `Z_MEM_ERROR`, ...); 0 for `tooLarge`.
        public var zlibCode: Int32
        public var operation: String
        /// zlib's own message where it gave one ("incorrect header check", "truncated gzip stream").
        public var message: String
        public var description: String { tooLarge ? "gzip \(operation): larger than the limit" : "gzip \(operation) failed: \(message)" }
    }

    /// Compresses `input` into a gzip member. Level 6 (zlib's default) is the knee of the
    /// size/CPU curve for JSON on a Pi.
    public static func compress(_ input: [UInt8], level: Int32 = 6) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        let initCode = trackme_deflate_init_gzip(&stream, level)
        guard initCode == Z_OK else { throw Failure(tooLarge: false, zlibCode: initCode, operation: "deflateInit", message: "zlib \(initCode)") }
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
        guard code == Z_STREAM_END else { throw Failure(tooLarge: false, zlibCode: code, operation: "deflate", message: "zlib \(code)") }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }

    /// Inflates one gzip member, refusing to produce more than `limit` bytes, checked while
    /// inflating: a gzip bomb (a few KB that would inflate to gigabytes) is refused after
    /// `limit` bytes of output, not after the memory is gone.
    public static func decompress(_ input: [UInt8], limit: Int = 64 << 20) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        let initCode = trackme_inflate_init_gzip(&stream)
        guard initCode == Z_OK else { throw Failure(tooLarge: false, zlibCode: initCode, operation: "inflateInit", message: "zlib \(initCode)") }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        let chunkSize = 64 * 1024
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        var input = input
        let inputCount = input.count
        return try input.withUnsafeMutableBufferPointer { (inputBuffer) throws(Failure) -> [UInt8] in
            stream.next_in = inputBuffer.baseAddress
            stream.avail_in = uInt(inputCount)
            while true {
                let (status, produced) = chunk.withUnsafeMutableBufferPointer { chunkBuffer -> (Int32, Int) in
                    stream.next_out = chunkBuffer.baseAddress
                    stream.avail_out = uInt(chunkSize)
                    let status = inflate(&stream, Z_NO_FLUSH)
                    return (status, chunkSize - Int(stream.avail_out))
                }
                if output.count + produced > limit {
                    throw Failure(tooLarge: true, zlibCode: 0, operation: "inflate", message: "larger than \(limit) bytes")
                }
                output.append(contentsOf: chunk[0..<produced])
                switch status {
                case Z_STREAM_END:
                    return output
                case Z_OK:
                    // No progress with all input taken: the stream ends early.
                    if produced == 0, stream.avail_in == 0 {
                        throw Failure(tooLarge: false, zlibCode: Z_BUF_ERROR, operation: "inflate", message: "truncated gzip stream")
                    }
                    continue
                case Z_BUF_ERROR where stream.avail_in == 0:
                    throw Failure(tooLarge: false, zlibCode: status, operation: "inflate", message: "truncated gzip stream")
                default:
                    let message = stream.msg.map { String(cString: $0) } ?? "inflate failed (\(status))"
                    throw Failure(tooLarge: false, zlibCode: status, operation: "inflate", message: message)
                }
            }
        }
    }
}
