import Testing
import TrackMeCore

/// The readings lane's decisions, without a store, a server or a clock.
@Suite struct ReadingsLanePolicyTests {
    static let settings = ReadingsLanePolicy.Settings(
        maxBatchReadings: 100,
        heartbeatInterval: .seconds(30),
        pollInterval: .seconds(1),
        sendInterval: .seconds(5),
        backoff: Backoff.sync,
        latestFirst: true
    )

    static func failed(
        readings: Int = 10,
        retryable: Bool = true,
        retryAfter: Duration? = nil,
        tooLarge: Bool = false
    )
        -> ReadingsLanePolicy.Outcome
    {
        .sendFailed(readings: readings, retryable: retryable, retryAfter: retryAfter, tooLarge: tooLarge, rebased: false)
    }

    @Test func aPartlyFilledBatchWaitsForTheSendIntervalAFullOneGoesAtOnce() {
        var policy = ReadingsLanePolicy(settings: Self.settings, seed: 1)
        #expect(policy.receive(.sent, now: .seconds(10)) == .now)
        #expect(!policy.sendsNow(available: 7, heartbeatDue: false, draining: false, now: .seconds(12)))
        #expect(policy.sendsNow(available: 100, heartbeatDue: false, draining: false, now: .seconds(12)))
        #expect(policy.sendsNow(available: 7, heartbeatDue: false, draining: false, now: .seconds(15)))
        #expect(policy.sendsNow(available: 7, heartbeatDue: false, draining: true, now: .seconds(11)))
        #expect(policy.receive(.idle, now: .seconds(12)) == .wait(.seconds(1), afterFailure: false, refused: false))
    }

    @Test func theHeartbeatIsDueWhenNoBatchWentForItsInterval() {
        var policy = ReadingsLanePolicy(settings: Self.settings, seed: 1)
        #expect(!policy.heartbeatDue(now: .seconds(29)))
        #expect(policy.heartbeatDue(now: .seconds(30)))
        _ = policy.receive(.sent, now: .seconds(30))
        #expect(!policy.heartbeatDue(now: .seconds(59)))
        policy.heartbeatSentAlone(now: .seconds(59))
        #expect(!policy.heartbeatDue(now: .seconds(88)))
        #expect(policy.heartbeatDue(now: .seconds(89)))
    }

    @Test func theNewestGoFirstOnceAfterAStartAndAfterEachFailure() {
        var policy = ReadingsLanePolicy(settings: Self.settings, seed: 1)
        var turns: [Bool] = []
        turns.append(policy.takeLatestTurn())
        turns.append(policy.takeLatestTurn())
        _ = policy.receive(Self.failed(), now: .seconds(1))
        turns.append(policy.takeLatestTurn())
        turns.append(policy.takeLatestTurn())
        #expect(turns == [true, false, true, false])
    }

    @Test func failuresBackOffWithJitterUpToTheCapAndASuccessStartsOver() {
        var policy = ReadingsLanePolicy(settings: Self.settings, seed: 7)
        var waits: [Duration] = []
        for n in 1...10 {
            guard case .wait(let wait, true, false) = policy.receive(Self.failed(), now: .seconds(Int64(n))) else {
                Issue.record("a failure must wait")
                return
            }
            waits.append(wait)
            #expect(wait <= Backoff.sync.ceiling(afterFailures: n))
        }
        #expect(policy.failures == 10)
        #expect(waits.last.map { $0 <= .seconds(60) } == true)
        _ = policy.receive(.sent, now: .seconds(100))
        #expect(policy.failures == 0)
        // The same seed draws the same waits: the simulation is exact.
        var again = ReadingsLanePolicy(settings: Self.settings, seed: 7)
        let first = again.receive(Self.failed(), now: .seconds(1))
        #expect(first == .wait(waits[0], afterFailure: true, refused: false))
    }

    @Test func retryAfterWinsAndARefusalWaitsTheCap() {
        var policy = ReadingsLanePolicy(settings: Self.settings, seed: 1)
        #expect(policy.receive(Self.failed(retryAfter: .seconds(7)), now: .zero) == .wait(.seconds(7), afterFailure: true, refused: false))
        #expect(policy.receive(Self.failed(retryable: false), now: .zero) == .wait(.seconds(60), afterFailure: true, refused: true))
    }

    @Test func aTooLargeBatchHalvesTheLimitAndGoesAgainAtOnce() {
        var policy = ReadingsLanePolicy(settings: Self.settings, seed: 1)
        #expect(policy.receive(Self.failed(readings: 100, tooLarge: true), now: .zero) == .now)
        #expect(policy.batchLimit == 50)
        #expect(policy.receive(Self.failed(readings: 30, tooLarge: true), now: .zero) == .now)
        #expect(policy.batchLimit == 15)
        for _ in 0..<10 { _ = policy.receive(Self.failed(readings: 1, tooLarge: true), now: .zero) }
        #expect(policy.batchLimit == 1)
    }

    @Test func theStoreIsAskedForBatchesInFlightOnlyAfterAStartOrAFailure() {
        var policy = ReadingsLanePolicy(settings: Self.settings, seed: 1)
        #expect(policy.mayHaveInFlight)
        policy.foundNoneInFlight()
        _ = policy.receive(.sent, now: .seconds(1))
        #expect(!policy.mayHaveInFlight)
        _ = policy.receive(Self.failed(), now: .seconds(2))
        #expect(policy.mayHaveInFlight)
        policy.foundNoneInFlight()
        _ = policy.receive(.notPrepared(retryable: true, retryAfter: nil), now: .seconds(3))
        #expect(policy.mayHaveInFlight)
    }
}
