import Testing
import TrackMeCore

/// The one hex codec: what the server writes for digests, the store reads for its key, and the
/// link logs for raw PDUs.
@Suite struct HexTests {
    @Test("encodes two lowercase digits a byte, with an optional separator")
    func encodes() {
        #expect(Hex.encode([0x06, 0x3C, 0x11, 0x04]) == "063c1104")
        #expect(Hex.encode([0x06, 0x3C, 0x11, 0x04], separator: " ") == "06 3c 11 04")
        #expect(Hex.encode([]) == "")
        #expect(Hex.byte(0x0A) == "0a")
        #expect(Hex.byte(0xFF) == "ff")
    }

    @Test("decodes either case, skips only the characters asked for, refuses odd counts and non-digits")
    func decodes() {
        #expect(Hex.decode("063C1104") == [0x06, 0x3C, 0x11, 0x04])
        #expect(Hex.decode("06 3c:11 04", ignoring: " :") == [0x06, 0x3C, 0x11, 0x04])
        #expect(Hex.decode("06 3c") == nil)
        #expect(Hex.decode("063") == nil)
        #expect(Hex.decode("0g") == nil)
        // A sign is not a digit (`UInt8("+f", radix: 16)` would read 15).
        #expect(Hex.decode("+f") == nil)
        #expect(Hex.decode("") == [])
        #expect(Hex.digit(UInt8(ascii: "F")) == 15)
        #expect(Hex.digit(UInt8(ascii: "g")) == nil)
    }

    @Test("every byte string survives encoding and decoding")
    func roundTrips() {
        let bytes = (0...255).map { UInt8($0) }
        #expect(Hex.decode(Hex.encode(bytes)) == bytes)
        #expect(Hex.decode(Hex.encode(bytes, separator: " "), ignoring: " ") == bytes)
    }
}
