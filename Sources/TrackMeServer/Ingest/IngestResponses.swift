import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import TrackMeCore

extension ServerAPI {
    /// 409 with `BatchConflict`: nothing of the batch was stored; the device re-bases above the
    /// floors and sends its readings again under new keys (WIRE.md, "Store epochs and conflicts").
    func batchConflictResponse(_ conflict: IngestConflict, batch: SyncBatch) throws -> Response {
        let message: String
        let field: String
        switch conflict.reason {
        case .storeEpochRebase:
            field = "store_epoch"
            message =
                "store epoch \(batch.storeEpoch ?? "-") numbers below what this device used before (its store started over): "
                + "re-base readings at or above seq_floor and batches at or above batch_seq_floor"
        default:
            field = "idempotency_key"
            message = "idempotency key \(batch.idempotencyKey) was used before with other readings: re-base and send them under new keys"
        }
        logger.info(
            "batch refused with 409",
            metadata: [
                "device.id": "\(batch.deviceID)", "sync.batch_seq": "\(batch.batchSequence)", "sync.conflict": "\(conflict.reason.rawValue)",
            ]
        )
        let body = BatchConflict(
            reason: conflict.reason,
            field: field,
            message: message,
            sequenceFloor: conflict.sequenceFloor,
            batchSequenceFloor: conflict.batchSequenceFloor
        )
        return try json(.conflict, body)
    }

    /// `POST /v1/heartbeats`: a device whose store cannot reserve a batch (its disk is full)
    /// still says it is alive. Records contact and the heartbeat; no readings, no key.
    func ingestHeartbeat(_ request: Request) async throws -> Response {
        let principal: Principal
        switch try await authenticateDevice(request) {
        case .device(let device): principal = device
        case .erased(let wipeOrder): return wipeOrder
        }
        let body = try await readBody(request)
        let message = try decode(HeartbeatMessage.self, body)
        guard message.deviceID == principal.deviceID else {
            throw APIError.forbidden("this token belongs to device \(principal.deviceID ?? "?"), not \(message.deviceID)")
        }
        try await store.recordHeartbeat(
            deviceID: message.deviceID,
            heartbeatJSON: try StoreJSON.encode(message.heartbeat),
            receivedMilliseconds: configuration.wallClock()
        )
        notifier.notify()
        return try json(.ok, HeartbeatAnswer(version: SyncBatch.currentVersion, deviceID: message.deviceID))
    }
}

struct HeartbeatAnswer: Codable, Sendable {
    var version: Int
    var deviceID: String
    enum CodingKeys: String, CodingKey {
        case version
        case deviceID = "device_id"
    }
}
