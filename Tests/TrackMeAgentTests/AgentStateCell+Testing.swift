import TrackMeAgent
import TrackMeCore

extension AgentStateCell {
    /// A fresh agent's state for tests of what reads or writes it alone.
    static func testing(clock: any Clock<Duration> = ContinuousClock(), batteryWarningPercent: Int = 15) -> AgentStateCell {
        let started = ReadingTimestamp(monotonicNanoseconds: 0, bootID: "boot-1", wallClockMilliseconds: nil, wallClockTrusted: false)
        return AgentStateCell(
            AgentState(
                deviceID: "pi-1",
                started: started,
                storeBudgetBytes: 0,
                batteryWarningPercent: batteryWarningPercent,
                rulesProfile: PersonProfile(name: "A", age: 40)
            ),
            clock: clock
        )
    }
}
