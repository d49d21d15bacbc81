import NIOCore

/// When a connection must have made progress, as a state machine over the request and response
/// parts that pass (sans-I/O: `ConnectionDeadlineHandler` feeds it and performs its actions).
///
/// - Waiting for a request (just opened, or kept alive after the last response): the head must
///   be complete within `idleTimeout` of that moment. A header trickled in one byte at a time
///   does not move this deadline: only a complete head does.
/// - Reading a body: its end must arrive within `bodyTimeout` of the head.
/// - Answering (request read, response not yet ended): no deadline; handlers and the SSE feed
///   bound their own work.
struct ConnectionDeadlines: Sendable {
    enum Event: Hashable, Sendable {
        case opened
        case requestHead
        case requestEnd
        case responseEnd
    }

    let idleTimeout: TimeAmount
    let bodyTimeout: TimeAmount
    private var waitingSince: NIODeadline?
    private var headAt: NIODeadline?
    /// Requests whose head was read and whose response has not ended.
    private var outstanding = 0

    init(idleTimeout: TimeAmount, bodyTimeout: TimeAmount) {
        self.idleTimeout = idleTimeout
        self.bodyTimeout = bodyTimeout
    }

    /// Applies an event; returns the deadline that holds from now on (nil: none).
    mutating func receive(_ event: Event, now: NIODeadline) -> NIODeadline? {
        switch event {
        case .opened:
            if outstanding == 0, headAt == nil { waitingSince = now }
        case .requestHead:
            outstanding += 1
            headAt = now
            waitingSince = nil
        case .requestEnd:
            headAt = nil
        case .responseEnd:
            outstanding = max(0, outstanding - 1)
            if outstanding == 0, headAt == nil { waitingSince = now }
        }
        return deadline
    }

    /// The moment the connection is to be closed if nothing changes.
    var deadline: NIODeadline? {
        if let headAt { return headAt + bodyTimeout }
        if let waitingSince { return waitingSince + idleTimeout }
        return nil
    }

    /// Whether a timer firing at `now` should close the connection.
    func isExpired(now: NIODeadline) -> Bool {
        guard let deadline else { return false }
        return now >= deadline
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
