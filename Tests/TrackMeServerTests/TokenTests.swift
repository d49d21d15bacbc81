import GzipCodec
import Testing

@testable import TrackMeServer

@Suite("Tokens")
struct TokenTests {
    @Test(
        "SHA-256 matches the FIPS 180-4 examples",
        arguments: [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        ]
    )
    func sha256(input: String, digest: String) {
        #expect(ServerDigest.sha256Hex(input) == digest)
    }

    @Test("HMAC-SHA-256 matches RFC 4231's test cases 2 and 6 (a key longer than the block)")
    func hmac() {
        #expect(
            ServerDigest.hmacSHA256Hex(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        )
        #expect(
            ServerDigest.hmacSHA256Hex(
                key: [UInt8](repeating: 0xAA, count: 131),
                message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)
            )
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        )
    }

    @Test("a token id never begins with a character a command line reads as an option")
    func idsStartWithALetterOrDigit() {
        // One in 64 began with "-" (or "_") and `trackme-server token revoke ID` refused it as a usage error.
        for _ in 0..<5_000 {
            let token = BearerToken.generate()
            #expect(token.id.first.map { $0.isLetter || $0.isNumber } == true, "\(token.id)")
            #expect(token.id.count == 12)
        }
    }

    @Test("generated tokens parse back, differ, and compare only when equal")
    func tokens() throws {
        let a = BearerToken.generate()
        let b = BearerToken.generate()
        #expect(a != b)
        #expect(a.secret.count >= 43)
        let parsed = try #require(BearerToken(authorization: "Bearer \(a.text)"))
        #expect(parsed == a)
        #expect(BearerToken(authorization: "Basic abc") == nil)
        #expect(BearerToken(authorization: "Bearer nodot") == nil)
        #expect(BearerToken.digestsEqual(a.secretHash, parsed.secretHash))
        #expect(!BearerToken.digestsEqual(a.secretHash, b.secretHash))
    }

    @Test("gzip inflation stops at the limit")
    func inflateLimit() throws {
        let bomb = try Gzip.zeros(total: 8 << 20)
        #expect { try GzipCodec.Gzip.decompress(Array(bomb), limit: 1 << 20) } throws: { ($0 as? GzipCodec.Gzip.Failure)?.tooLarge == true }
        #expect(try GzipCodec.Gzip.decompress(Array(bomb), limit: 8 << 20).count == 8 << 20)
    }
}
