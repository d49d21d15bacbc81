import GzipCodec
import Testing
@testable import TrackMeServer

@Suite("Tokens")
struct TokenTests {
    @Test("SHA-256 matches the FIPS 180-4 examples", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func sha256(input: String, digest: String) {
        #expect(SHA256.hexHash(input) == digest)
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
