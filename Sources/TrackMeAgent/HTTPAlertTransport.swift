public import EdgeDispatch
public import EdgeStore
public import EdgeSync
public import TrackMeCore

/// The dispatch lane's way to the server: `POST /v1/alerts` through the sync client's HTTP
/// transport, recording each delivered update in the journal so the sync engine's alert lane
/// does not send it again.
public struct HTTPAlertTransport: AlertTransport {
    let sender: HTTPAlertSender
    let store: ReadingStore

    public init(transport: any HTTPTransport, token: String, store: ReadingStore) {
        sender = HTTPAlertSender(transport: transport, token: token)
        self.store = store
    }

    public func send(_ update: AlertUpdate) async throws -> AlertReceipt {
        try await sender.send(update)
        store.markAlertUpdateDelivered(alertID: update.alert.id, updateSequence: update.updateSequence)
        // Acknowledgements reach the device with the next batch's acknowledgement.
        return AlertReceipt(acknowledged: false)
    }
}
