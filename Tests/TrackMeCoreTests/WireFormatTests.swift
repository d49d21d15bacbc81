import Foundation
import Testing
import TrackMeCore

@Suite struct WireFormatTests {
    @Test func batchRoundTrips() throws {
        let data = try WireCodec.encode(Fixtures.batch)
        let decoded = try WireCodec.decode(SyncBatch.self, from: data)
        #expect(decoded == Fixtures.batch)
        #expect(decoded.idempotencyKey == "pi-0042:17")
    }

    @Test func alertUpdateRoundTrips() throws {
        let update = AlertUpdate(alert: Fixtures.alert, updateSequence: 0, type: .raised, sent: Fixtures.t0)
        let decoded = try WireCodec.decode(AlertUpdate.self, from: try WireCodec.encode(update))
        #expect(decoded == update)
    }

    @Test func unknownPositionStaysUnknown() throws {
        var alert = Fixtures.alert
        alert.position = nil
        let update = AlertUpdate(alert: alert, updateSequence: 3, type: .position, sent: Fixtures.t0)
        let json = String(decoding: try WireCodec.encode(update), as: UTF8.self)
        #expect(json.contains("\"position\":null"))
        #expect(try WireCodec.decode(AlertUpdate.self, from: Data(json.utf8)).alert.position == nil)
    }

    @Test func absentFixFieldsAreNullNotZero() throws {
        let json = String(decoding: try WireCodec.encode(Fixtures.fix), as: UTF8.self)
        #expect(json.contains("\"alt_msl\":null"))
        #expect(json.contains("\"track\":null"))
    }

    /// The batch as JSON object, to be mutated by the rejection tests.
    private func batchObject() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: try WireCodec.encode(Fixtures.batch))
        return try #require(object as? [String: Any])
    }

    private func decodeFailure(_ object: [String: Any]) throws -> WireFormatError {
        let data = try JSONSerialization.data(withJSONObject: object)
        do {
            _ = try WireCodec.decode(SyncBatch.self, from: data)
        } catch {
            return error
        }
        Issue.record("decoding succeeded")
        return WireFormatError(code: .malformedJSON, field: "<none>", message: "")
    }

    @Test(arguments: ["device_id", "batch_seq", "idempotency_key", "readings", "version", "dropped_by_budget"])
    func missingTopLevelFieldIsNamed(field: String) throws {
        var object = try batchObject()
        object.removeValue(forKey: field)
        let error = try decodeFailure(object)
        #expect(error.code == .missingField)
        #expect(error.field == field)
    }

    @Test func missingNestedFieldIsNamedWithItsPath() throws {
        var object = try batchObject()
        var readings = try #require(object["readings"] as? [[String: Any]])
        var hr = try #require(readings[0]["hr"] as? [String: Any])
        hr.removeValue(forKey: "bpm")
        readings[0]["hr"] = hr
        object["readings"] = readings
        let error = try decodeFailure(object)
        #expect(error.code == .missingField)
        #expect(error.field == "readings[0].hr.bpm")
    }

    @Test func wrongTypedFieldIsNamed() throws {
        var object = try batchObject()
        var readings = try #require(object["readings"] as? [[String: Any]])
        var fix = try #require(readings[1]["fix"] as? [String: Any])
        fix["lat"] = "north"
        readings[1]["fix"] = fix
        object["readings"] = readings
        let error = try decodeFailure(object)
        #expect(error.code == .wrongType)
        #expect(error.field == "readings[1].fix.lat")
    }

    @Test func wrongTypedTopLevelFieldIsNamed() throws {
        var object = try batchObject()
        object["batch_seq"] = "seventeen"
        let error = try decodeFailure(object)
        #expect(error.code == .wrongType)
        #expect(error.field == "batch_seq")
    }

    @Test func unknownReadingKindIsNamed() throws {
        var object = try batchObject()
        var readings = try #require(object["readings"] as? [[String: Any]])
        readings[0]["kind"] = "temperature"
        object["readings"] = readings
        let error = try decodeFailure(object)
        #expect(error.code == .invalidValue)
        #expect(error.field == "readings[0].kind")
    }

    @Test func futureVersionIsRejected() throws {
        var object = try batchObject()
        object["version"] = 2
        let error = try decodeFailure(object)
        #expect(error.field == "version")
        #expect(error.message.contains("unsupported version 2"))
    }

    @Test func idempotencyKeyMustMatchDeviceAndSequence() throws {
        var object = try batchObject()
        object["idempotency_key"] = "pi-0043:17"
        let error = try decodeFailure(object)
        #expect(error.field == "idempotency_key")
    }

    @Test func garbageIsMalformedJSON() {
        #expect(throws: WireFormatError.self) { try WireCodec.decode(SyncBatch.self, from: Data("{\"version\":".utf8)) }
        do {
            _ = try WireCodec.decode(SyncBatch.self, from: Data("not json".utf8))
        } catch {
            #expect(error.code == .malformedJSON)
        }
    }

    /// The examples in WIRE.md must stay valid messages of the current version.
    @Test func wireDocumentExamplesDecode() throws {
        let doc = try String(
            contentsOf: URL(fileURLWithPath: #filePath)
                .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Sources/TrackMeCore/WIRE.md"),
            encoding: .utf8
        )
        let blocks = doc.components(separatedBy: "```json\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        #expect(blocks.count >= 3)
        let batch = try WireCodec.decode(SyncBatch.self, from: Data(blocks[0].utf8))
        #expect(batch == Fixtures.batch)
        let alert = try WireCodec.decode(AlertUpdate.self, from: Data(blocks[1].utf8))
        #expect(alert.alert == Fixtures.alert)
        let ack = try WireCodec.decode(BatchAcknowledgement.self, from: Data(blocks[2].utf8))
        #expect(ack.idempotencyKey == batch.idempotencyKey)
    }
}
