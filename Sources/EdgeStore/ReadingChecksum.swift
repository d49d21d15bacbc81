import CZlib

/// The integrity check of one stored reading: CRC-32 (zlib's) over every column that makes the
/// reading, so that a flipped byte in the body (a bpm of 74 read back as 40) or in a timestamp
/// is found on read instead of being sent. SQLite's own checks (`quick_check`) do not look
/// inside a row's values.
enum ReadingChecksum {
    static func compute(boot: Int64, monotonicNanoseconds: Int64, wallMilliseconds: Int64?, body: [UInt8]) -> Int64 {
        var header: [UInt8] = []
        header.reserveCapacity(25)
        appendLittleEndian(boot, to: &header)
        appendLittleEndian(monotonicNanoseconds, to: &header)
        if let wall = wallMilliseconds {
            header.append(1)
            appendLittleEndian(wall, to: &header)
        } else {
            header.append(0)
        }
        var crc = header.withUnsafeBufferPointer { crc32(0, $0.baseAddress, UInt32($0.count)) }
        crc = body.withUnsafeBufferPointer { crc32(crc, $0.baseAddress, UInt32($0.count)) }
        return Int64(crc)
    }

    private static func appendLittleEndian(_ value: Int64, to out: inout [UInt8]) {
        var v = UInt64(bitPattern: value)
        for _ in 0..<8 {
            out.append(UInt8(truncatingIfNeeded: v))
            v >>= 8
        }
    }
}
