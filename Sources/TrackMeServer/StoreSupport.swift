import Foundation
import TrackMeCore

/// A storage failure that is not the client's fault.
struct StoreError: Error, Hashable, Sendable, CustomStringConvertible {
    enum Code: String, Hashable, Sendable {
        case inconsistent
        case badConfiguration = "bad_configuration"
        case unavailable
    }

    var code: Code
    var message: String

    var description: String { "\(code.rawValue): \(message)" }
}

/// The SSE event names of the dispatcher feed.
enum FeedKind {
    static let alert = "alert"
    static let alertAcknowledged = "alert_acknowledged"
    static let deviceSilent = "device_silent"
    static let deviceReturned = "device_returned"
}

/// `data` of `device_silent` and `device_returned`.
struct DeviceEventData: Codable, Hashable, Sendable {
    var deviceID: String
    var lastSeenMilliseconds: Int64
    var silentForMilliseconds: Int64?

    init(deviceID: String, lastSeenMilliseconds: Int64, silentForMilliseconds: Int64? = nil) {
        self.deviceID = deviceID
        self.lastSeenMilliseconds = lastSeenMilliseconds
        self.silentForMilliseconds = silentForMilliseconds
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id"
        case lastSeenMilliseconds = "last_seen_ms"
        case silentForMilliseconds = "silent_for_ms"
    }
}

/// `data` of `alert_acknowledged`.
struct AlertAcknowledgedData: Codable, Hashable, Sendable {
    var alertID: String
    var deviceID: String
    var acknowledgedMilliseconds: Int64

    enum CodingKeys: String, CodingKey {
        case alertID = "alert_id"
        case deviceID = "device_id"
        case acknowledgedMilliseconds = "acknowledged_ms"
    }
}

/// JSON text columns, written with the wire encoder (sorted keys) so both stores hold the same
/// bytes.
enum StoreJSON {
    static func encode<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try WireCodec.encode(value), as: UTF8.self)
    }

    static func decode<T: Decodable>(_ text: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(text.utf8))
    }
}
