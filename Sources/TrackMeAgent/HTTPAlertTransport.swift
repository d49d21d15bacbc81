public import EdgeDispatch
public import EdgeSync
public import TrackMeCore

/// The dispatch lane's way to the server: `POST /v1/alerts` through the sync client's HTTP
/// transport. (The lane records deliveries in the journal itself; acknowledgements come back
/// with the readings lane's batch acknowledgements.)
public struct HTTPAlertTransport: AlertTransport {
    let sender: HTTPAlertSender

    public init(transport: any HTTPTransport, token: String) {
        sender = HTTPAlertSender(transport: transport, token: token)
    }

    public func send(_ update: AlertUpdate) async throws {
        try await sender.send(update)
    }
}
