import BlueZHeartRate
import Logging
import Testing
import TrackMeCore

/// The ATT client against a scripted server on the other end of a real SOCK_SEQPACKET socket pair.
@Suite(.timeLimit(.minutes(10))) struct ATTClientTests {
    let logger = Logger(label: "test.att")

    @Test func transactionTimesOutAfterThirtySecondsOnTheInjectedClock() async throws {
        let clock = VirtualClock()
        let (central, peripheral) = try SeqPacketBearer.pair()
        let client = ATTClient(bearer: central, clock: clock, logger: logger)
        await client.start()
        var requests = peripheral.incoming.makeAsyncIterator()

        let result = Task { try await client.read(handle: 6) }
        #expect(try await requests.next() == ATTPDU.readRequest(handle: 6).encoded)
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(29))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        let error = try await #require(throws: ATTClientError.self) { try await result.value }
        #expect(error.code == .transactionTimeout)
        // ATT forbids further requests on a timed-out bearer; the client closed it.
        let again = try await #require(throws: ATTClientError.self) { try await client.read(handle: 6) }
        #expect(again.code == .transactionTimeout)
        #expect(try await requests.next() == nil)
    }

    @Test func errorResponseBecomesATypedError() async throws {
        let (central, peripheral) = try SeqPacketBearer.pair()
        let client = ATTClient(bearer: central, clock: VirtualClock(), logger: logger)
        await client.start()
        var requests = peripheral.incoming.makeAsyncIterator()
        let result = Task { try await client.read(handle: 3) }
        _ = try await requests.next()
        try peripheral.send(ATTPDU.errorResponse(requestOpcode: ATTPDU.Opcode.readRequest, handle: 3, error: .readNotPermitted).encoded)
        let error = try await #require(throws: ATTClientError.self) { try await result.value }
        #expect(error.code == .errorResponse)
        #expect(error.attError == .readNotPermitted)
        #expect(error.handle == 3)
        // The bearer is still usable after an Error Response.
        let second = Task { try await client.read(handle: 6) }
        #expect(try await requests.next() == ATTPDU.readRequest(handle: 6).encoded)
        try peripheral.send(ATTPDU.readResponse(value: [0x01]).encoded)
        #expect(try await second.value == [0x01])
    }

    @Test func indicationsAreConfirmedAndDelivered() async throws {
        let (central, peripheral) = try SeqPacketBearer.pair()
        let client = ATTClient(bearer: central, clock: VirtualClock(), logger: logger)
        await client.start()
        var fromClient = peripheral.incoming.makeAsyncIterator()
        var messages = client.messages.makeAsyncIterator()
        try peripheral.send(ATTPDU.handleValueIndication(handle: 3, value: [0x06, 0x50]).encoded)
        #expect(try await fromClient.next() == ATTPDU.handleValueConfirmation.encoded)
        #expect(await messages.next() == .indication(handle: 3, value: [0x06, 0x50]))
        try peripheral.send(ATTPDU.handleValueNotification(handle: 3, value: [0x06, 0x51]).encoded)
        #expect(await messages.next() == .notification(handle: 3, value: [0x06, 0x51]))
    }

    /// Two callers at once: the second request goes out only after the first response, and each
    /// caller gets its own answer.
    @Test func oneRequestOutstandingAtATime() async throws {
        let clock = VirtualClock()
        let (central, peripheral) = try SeqPacketBearer.pair()
        let client = ATTClient(bearer: central, clock: clock, logger: logger)
        await client.start()
        var requests = peripheral.incoming.makeAsyncIterator()
        let a = Task { try await client.read(handle: 6) }
        let b = Task { try await client.read(handle: 9) }
        let first = try #require(try await requests.next())
        // While the first is unanswered exactly one transaction timer runs.
        await clock.waitForSleepers(1)
        #expect(clock.sleeperCount == 1)
        try peripheral.send(ATTPDU.readResponse(value: [first[1]]).encoded)
        let second = try #require(try await requests.next())
        #expect(Set([first[1], second[1]]) == [6, 9])
        try peripheral.send(ATTPDU.readResponse(value: [second[1]]).encoded)
        #expect(try await a.value == [6])
        #expect(try await b.value == [9])
    }

    @Test func malformedResponseFailsTheRequestAndIsReported() async throws {
        let (central, peripheral) = try SeqPacketBearer.pair()
        let client = ATTClient(bearer: central, clock: VirtualClock(), logger: logger)
        await client.start()
        var requests = peripheral.incoming.makeAsyncIterator()
        var messages = client.messages.makeAsyncIterator()
        let result = Task { try await client.exchangeMTU(185) }
        _ = try await requests.next()
        try peripheral.send([ATTPDU.Opcode.exchangeMTUResponse, 0x17])
        let error = try await #require(throws: ATTClientError.self) { try await result.value }
        #expect(error.code == .malformedResponse)
        guard case .malformed(let bytes, let decodingError) = await messages.next() else {
            Issue.record("expected a malformed message")
            return
        }
        #expect(bytes == [0x03, 0x17])
        #expect(decodingError.code == .truncated)
    }

    @Test func peerHangUpFailsPendingRequest() async throws {
        let (central, peripheral) = try SeqPacketBearer.pair()
        let client = ATTClient(bearer: central, clock: VirtualClock(), logger: logger)
        await client.start()
        var requests = peripheral.incoming.makeAsyncIterator()
        let result = Task { try await client.read(handle: 6) }
        _ = try await requests.next()
        peripheral.close()
        let error = try await #require(throws: ATTClientError.self) { try await result.value }
        #expect(error.code == .linkClosed)
        await client.waitUntilClosed()
    }
}
