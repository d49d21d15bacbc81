import EdgeDispatch
import TrackMeAgent
import TrackMeCore

extension AgentCore {
    /// One step of the dispatch lane as the daemon's `DispatchService` runs it: the lane's due
    /// work (`DispatchLane.step`: its policy, sends, send timeout, fallback), then each delivery
    /// told to the rules. Returns what the lane did, as `inbox` (the `onLaneEvent` the core was
    /// built with) collected it, for the harness's own accounts.
    func stepDispatchLane(inbox: SimulatedDevice.DispatchInbox, at timestamp: ReadingTimestamp) async -> [DispatchLaneEvent] {
        await lane.step()
        let events = inbox.takeLaneEvents()
        for case .delivered(let id) in events {
            await pipeline.receive(.delivered(alertID: id), at: timestamp)
        }
        return events
    }
}
