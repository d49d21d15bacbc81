import EdgeSync
import Foundation

/// The sync client's real HTTP transport with the scenario's network faults in front of it: a
/// `network_down` window fails every request as a connection failure would, a `server_errors`
/// window answers with the error status without reaching the server. Requests also count how
/// many readings the device sent, for the report.
struct FaultInjectingTransport: HTTPTransport {
    let base: any HTTPTransport
    let faults: FaultState

    func post(path: String, headers: [String: String], body: [UInt8]) async throws(SyncError) -> HTTPResponse {
        let flags = faults.current
        if flags.networkDown {
            throw SyncError(code: .transport, message: "simulated network outage: connection refused")
        }
        if let status = flags.serverErrorStatus {
            let json = #"{"error":{"code":"simulated","field":null,"message":"simulated server error"}}"#
            return HTTPResponse(status: status, headers: ["content-type": "application/json"], body: Array(json.utf8))
        }
        return try await base.post(path: path, headers: headers, body: body)
    }
}
