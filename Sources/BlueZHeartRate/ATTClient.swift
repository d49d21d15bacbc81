public import Logging
import TrackMeCore

/// What the server sends on its own: notifications, indications (already confirmed), and PDUs
/// that did not parse.
public enum ATTServerMessage: Sendable, Hashable {
    case notification(handle: UInt16, value: [UInt8])
    case indication(handle: UInt16, value: [UInt8])
    case malformed(bytes: [UInt8], error: PayloadDecodingError)
}

/// An ATT client over one bearer: one request outstanding at a time (later callers queue), each
/// bounded by the ATT transaction timeout on the injected clock. Server-initiated PDUs arrive on
/// `messages`; indications are confirmed before they are delivered.
public actor ATTClient {
    public static let defaultMTU = 23
    public static let transactionTimeout: Duration = .seconds(30)

    /// Notifications, indications and malformed PDUs; finishes when the link closes.
    public nonisolated let messages: AsyncStream<ATTServerMessage>
    /// The negotiated ATT MTU (23 until `exchangeMTU` succeeds).
    public private(set) var mtu = ATTClient.defaultMTU

    private let bearer: any ATTBearer
    private let clock: any Clock<Duration>
    private let timeout: Duration
    private let logger: Logger
    private let messageContinuation: AsyncStream<ATTServerMessage>.Continuation

    private struct Pending {
        var id: UInt64
        var request: ATTPDU
        var continuation: CheckedContinuation<ATTPDU, any Error>
        var timeoutTask: Task<Void, Never>?
    }

    private var pending: Pending?
    private var nextID: UInt64 = 0
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// Set once the link closed or a transaction timed out; every later request fails with it.
    private var failure: ATTClientError?
    private var pump: Task<Void, Never>?
    private var closedWaiters: [CheckedContinuation<Void, Never>] = []

    public init(bearer: any ATTBearer, clock: any Clock<Duration>, transactionTimeout: Duration = ATTClient.transactionTimeout, logger: Logger) {
        self.bearer = bearer
        self.clock = clock
        self.timeout = transactionTimeout
        self.logger = logger
        (messages, messageContinuation) = AsyncStream<ATTServerMessage>.makeStream(bufferingPolicy: .bufferingNewest(256))
    }

    /// Starts receiving. Call once, before the first request.
    public func start() {
        guard pump == nil else { return }
        let incoming = bearer.incoming
        pump = Task { [weak self] in
            var endError: (any Error)?
            do {
                for try await bytes in incoming {
                    guard let self else { return }
                    await self.receive(bytes)
                }
            } catch {
                endError = error
            }
            await self?.linkEnded(endError)
        }
    }

    /// Closes the bearer; pending and later requests fail with `.linkClosed`.
    public func close() {
        bearer.close()
        fail(ATTClientError(code: .linkClosed, detail: "closed by client"))
    }

    /// Why the link closed, once it has.
    public var closeReason: ATTClientError? { failure }

    /// Waits until the link has closed (server hang-up, error, timeout or `close()`).
    public func waitUntilClosed() async {
        if failure != nil { return }
        await withCheckedContinuation { closedWaiters.append($0) }
    }

    // MARK: Requests

    /// Exchanges MTUs; returns the MTU in effect (the smaller of both, at least 23).
    @discardableResult
    public func exchangeMTU(_ clientMTU: UInt16 = 185) async throws -> Int {
        let response = try await transact(.exchangeMTURequest(clientMTU: clientMTU))
        guard case .exchangeMTUResponse(let serverMTU) = response else { throw unexpected(response, to: .exchangeMTURequest(clientMTU: clientMTU)) }
        mtu = max(Self.defaultMTU, Int(min(clientMTU, serverMTU)))
        return mtu
    }

    /// All primary services (Read By Group Type over 0x2800, repeated until Attribute Not Found).
    public func discoverPrimaryServices() async throws -> [GATTService] {
        var services: [GATTService] = []
        var start: UInt16 = 0x0001
        while true {
            let request = ATTPDU.readByGroupTypeRequest(start: start, end: 0xFFFF, type: .primaryService)
            guard let response = try await transactUnlessNotFound(request) else { break }
            guard case .readByGroupTypeResponse(let entries) = response else { throw unexpected(response, to: request) }
            for entry in entries {
                let uuid = try decodeUUID(entry.value, request: request)
                services.append(GATTService(uuid: uuid, startHandle: entry.handle, endHandle: entry.endGroupHandle))
            }
            guard let last = entries.last?.endGroupHandle, last < 0xFFFF, last >= start else { break }
            start = last + 1
        }
        return services
    }

    /// The characteristics declared in `handles` (Read By Type over 0x2803).
    public func discoverCharacteristics(in handles: ClosedRange<UInt16>) async throws -> [GATTCharacteristic] {
        var characteristics: [GATTCharacteristic] = []
        var start = handles.lowerBound
        while start <= handles.upperBound {
            let request = ATTPDU.readByTypeRequest(start: start, end: handles.upperBound, type: .characteristic)
            guard let response = try await transactUnlessNotFound(request) else { break }
            guard case .readByTypeResponse(let entries) = response else { throw unexpected(response, to: request) }
            for entry in entries {
                guard entry.value.count == 5 || entry.value.count == 19 else {
                    throw ATTClientError(
                        code: .malformedResponse,
                        requestOpcode: request.opcode,
                        handle: entry.handle,
                        detail: "characteristic declaration of \(entry.value.count) bytes"
                    )
                }
                let valueHandle = UInt16(entry.value[1]) | UInt16(entry.value[2]) << 8
                let uuid = try decodeUUID(Array(entry.value[3...]), request: request)
                characteristics.append(
                    GATTCharacteristic(
                        uuid: uuid,
                        declarationHandle: entry.handle,
                        valueHandle: valueHandle,
                        properties: GATTCharacteristic.Properties(rawValue: entry.value[0])
                    )
                )
            }
            guard let last = entries.last?.handle, last < handles.upperBound, last >= start else { break }
            start = last + 1
        }
        return characteristics
    }

    /// The descriptors in `handles` (Find Information).
    public func discoverDescriptors(in handles: ClosedRange<UInt16>) async throws -> [ATTPDU.HandleUUID] {
        var descriptors: [ATTPDU.HandleUUID] = []
        var start = handles.lowerBound
        while start <= handles.upperBound {
            let request = ATTPDU.findInformationRequest(start: start, end: handles.upperBound)
            guard let response = try await transactUnlessNotFound(request) else { break }
            guard case .findInformationResponse(let entries) = response else { throw unexpected(response, to: request) }
            descriptors += entries
            guard let last = entries.last?.handle, last < handles.upperBound, last >= start else { break }
            start = last + 1
        }
        return descriptors
    }

    public func read(handle: UInt16) async throws -> [UInt8] {
        let request = ATTPDU.readRequest(handle: handle)
        let response = try await transact(request)
        guard case .readResponse(let value) = response else { throw unexpected(response, to: request) }
        return value
    }

    public func write(handle: UInt16, value: [UInt8]) async throws {
        let request = ATTPDU.writeRequest(handle: handle, value: value)
        let response = try await transact(request)
        guard case .writeResponse = response else { throw unexpected(response, to: request) }
    }

    /// Writes a Client Characteristic Configuration descriptor: 0x0001 notifications, 0x0002
    /// indications.
    public func subscribe(cccdHandle: UInt16, indications: Bool = false) async throws {
        try await write(handle: cccdHandle, value: indications ? [0x02, 0x00] : [0x01, 0x00])
    }

    // MARK: Transactions

    /// Sends one request and awaits its response. Error Responses throw `.errorResponse`.
    public func transact(_ request: ATTPDU) async throws -> ATTPDU {
        await acquire()
        defer { release() }
        if let failure { throw failure }
        nextID += 1
        let id = nextID
        let response: ATTPDU = try await withCheckedThrowingContinuation { continuation in
            do {
                try bearer.send(request.encoded)
            } catch {
                continuation.resume(throwing: ATTClientError(code: .linkClosed, requestOpcode: request.opcode, detail: "send failed: \(error)"))
                return
            }
            let clock = self.clock
            let timeout = self.timeout
            let timeoutTask = Task { [weak self] in
                // A response can beat this task to its first step; then it must not even start
                // sleeping (a VirtualClock would keep the orphaned sleeper until time passes it).
                if Task.isCancelled { return }
                do {
                    try await clock.sleep(for: timeout)
                } catch {
                    return
                }
                await self?.transactionTimedOut(id)
            }
            pending = Pending(id: id, request: request, continuation: continuation, timeoutTask: timeoutTask)
        }
        if case .errorResponse(_, let handle, let error) = response {
            throw ATTClientError(code: .errorResponse, requestOpcode: request.opcode, handle: handle, attError: error, detail: "server refused")
        }
        return response
    }

    private func transactUnlessNotFound(_ request: ATTPDU) async throws -> ATTPDU? {
        do {
            return try await transact(request)
        } catch let error as ATTClientError where error.code == .errorResponse && error.attError == .attributeNotFound {
            return nil
        }
    }

    private func acquire() async {
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    private func release() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()
        }
    }

    private func transactionTimedOut(_ id: UInt64) {
        guard let current = pending, current.id == id else { return }
        logger.info("ATT transaction timed out; closing the bearer", metadata: ["ble.att.opcode": "\(current.request.opcode)"])
        let error = ATTClientError(
            code: .transactionTimeout,
            requestOpcode: current.request.opcode,
            detail: "no response within \(timeout)"
        )
        // ATT allows no further requests on a bearer after a timeout: close it.
        bearer.close()
        fail(error)
    }

    // MARK: Receiving

    private func receive(_ bytes: [UInt8]) {
        let pdu: ATTPDU
        do {
            pdu = try ATTPDU(bytes: bytes)
        } catch {
            logger.debug("malformed ATT PDU", metadata: ["ble.att.bytes": "\(Hex.encode(bytes, separator: " "))", "ble.att.error": "\(error)"])
            // A malformed answer to our request fails that request now rather than at the timeout.
            if let current = pending, let opcode = bytes.first,
                opcode == current.request.opcode + 1 || opcode == ATTPDU.Opcode.errorResponse
            {
                complete(
                    with: .failure(
                        ATTClientError(
                            code: .malformedResponse,
                            requestOpcode: current.request.opcode,
                            detail: error.description
                        )
                    )
                )
            }
            messageContinuation.yield(.malformed(bytes: bytes, error: error))
            return
        }
        switch pdu {
        case .handleValueNotification(let handle, let value):
            messageContinuation.yield(.notification(handle: handle, value: value))
        case .handleValueIndication(let handle, let value):
            try? bearer.send(ATTPDU.handleValueConfirmation.encoded)
            messageContinuation.yield(.indication(handle: handle, value: value))
        case .exchangeMTURequest:
            // Servers may start their own MTU exchange; answer with what we offer.
            try? bearer.send(ATTPDU.exchangeMTUResponse(serverMTU: UInt16(mtu)).encoded)
        case .findInformationRequest, .readByTypeRequest, .readRequest, .readByGroupTypeRequest, .writeRequest:
            // We host no attributes.
            try? bearer.send(ATTPDU.errorResponse(requestOpcode: pdu.opcode, handle: 0, error: .requestNotSupported).encoded)
        case .writeCommand, .handleValueConfirmation:
            break
        case .errorResponse(let requestOpcode, _, _):
            if let current = pending, current.request.opcode == requestOpcode {
                complete(with: .success(pdu))
            } else {
                logger.debug("unsolicited ATT error response", metadata: ["ble.att.bytes": "\(Hex.encode(bytes, separator: " "))"])
            }
        case .exchangeMTUResponse, .findInformationResponse, .readByTypeResponse, .readResponse,
            .readByGroupTypeResponse, .writeResponse:
            if let current = pending, current.request.opcode + 1 == pdu.opcode {
                complete(with: .success(pdu))
            } else {
                logger.debug("unsolicited ATT response", metadata: ["ble.att.bytes": "\(Hex.encode(bytes, separator: " "))"])
            }
        }
    }

    private func complete(with result: Result<ATTPDU, ATTClientError>) {
        guard let current = pending else { return }
        pending = nil
        current.timeoutTask?.cancel()
        current.continuation.resume(with: result.mapError { $0 as any Error })
    }

    private func linkEnded(_ error: (any Error)?) {
        let detail = error.map { "link failed: \($0)" } ?? "peer closed the link"
        fail(ATTClientError(code: .linkClosed, detail: detail))
    }

    private func fail(_ error: ATTClientError) {
        if failure == nil { failure = error }
        complete(with: .failure(error))
        messageContinuation.finish()
        for waiter in closedWaiters { waiter.resume() }
        closedWaiters = []
    }

    private func unexpected(_ response: ATTPDU, to request: ATTPDU) -> ATTClientError {
        ATTClientError(code: .malformedResponse, requestOpcode: request.opcode, detail: "unexpected response opcode 0x\(Hex.byte(response.opcode))")
    }

    private func decodeUUID(_ bytes: [UInt8], request: ATTPDU) throws -> BluetoothUUID {
        do {
            return try BluetoothUUID(littleEndian: bytes, offset: 0)
        } catch {
            throw ATTClientError(code: .malformedResponse, requestOpcode: request.opcode, detail: error.description)
        }
    }
}

/// A primary service found by discovery.
public struct GATTService: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var startHandle: UInt16
    public var endHandle: UInt16
    public var handles: ClosedRange<UInt16> { startHandle...max(startHandle, endHandle) }
}

/// A characteristic found by discovery.
public struct GATTCharacteristic: Hashable, Sendable {
    public struct Properties: OptionSet, Hashable, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let read = Properties(rawValue: 0x02)
        public static let writeWithoutResponse = Properties(rawValue: 0x04)
        public static let write = Properties(rawValue: 0x08)
        public static let notify = Properties(rawValue: 0x10)
        public static let indicate = Properties(rawValue: 0x20)
    }

    public var uuid: BluetoothUUID
    public var declarationHandle: UInt16
    public var valueHandle: UInt16
    public var properties: Properties
}
