public import CoreMetrics
import Foundation
public import Logging
public import ServiceLifecycle
import TrackMeCore
import TrackMeSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The local control endpoint: a Unix stream socket speaking line-delimited JSON
/// (`ControlRequest` in, `ControlResponse` out, any number per connection).
///
/// `bind` creates the socket before the service group starts, so the socket accepts
/// connections by the time systemd hears READY=1, and a bad path fails the start instead of a
/// running service. On graceful shutdown the server stops accepting, lets connections in
/// flight finish (each bounded by its idle timeout), and removes the socket file.
public final class StatusServer: Service, Sendable {
    public let socketPath: String
    private let listener: Socket
    private let control: any AgentControl
    private let logger: Logger
    private let idleTimeoutMilliseconds: Int
    private let metricsFactory: any MetricsFactory

    private init(
        socketPath: String,
        listener: Socket,
        control: any AgentControl,
        logger: Logger,
        idleTimeoutMilliseconds: Int,
        metricsFactory: any MetricsFactory
    ) {
        self.socketPath = socketPath
        self.listener = listener
        self.control = control
        self.logger = logger
        self.idleTimeoutMilliseconds = idleTimeoutMilliseconds
        self.metricsFactory = metricsFactory
    }

    /// Creates the socket at `socketPath` (and its directory if missing), mode 0660 so the
    /// agent's group may use the CLI.
    public static func bind(
        socketPath: String,
        control: any AgentControl,
        logger: Logger,
        idleTimeout: Duration = .seconds(5),
        metricsFactory: (any MetricsFactory)? = nil
    ) throws -> StatusServer {
        let directory = (socketPath as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(
                atPath: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o750]
            )
        }
        let listener = try Socket.listenUnixStream(path: socketPath)
        let timeout = idleTimeout.components
        return StatusServer(
            socketPath: socketPath,
            listener: listener,
            control: control,
            logger: logger,
            idleTimeoutMilliseconds: max(1, Int(timeout.seconds) * 1000 + Int(timeout.attoseconds / 1_000_000_000_000_000)),
            metricsFactory: metricsFactory ?? MetricsSystem.factory
        )
    }

    /// Closes and removes the socket of a server that will never run (the daemon failed to
    /// start after binding it).
    func discard() {
        listener.close()
        _ = unlink(socketPath)
    }

    public func run() async throws {
        let logger = self.logger
        let loop = AcceptLoop(listener: listener) { error in
            logger.info("status socket accept failed", metadata: ["error": "\(error)"])
        }
        logger.info("status socket listening", metadata: ["status.socket": "\(socketPath)"])
        await withDiscardingTaskGroup { group in
            for await connection in loop.connections.cancelOnGracefulShutdown() {
                group.addTask { await self.serve(connection) }
            }
            await loop.stopAndWait()
        }
        _ = unlink(socketPath)
        logger.info("status socket closed", metadata: ["status.socket": "\(socketPath)"])
    }

    private func serve(_ connection: Socket) async {
        defer { connection.close() }
        let reader = LineReader(socket: connection)
        do {
            try connection.setTimeouts(milliseconds: idleTimeoutMilliseconds)
            while let line = try await BlockingThreads.shared.run({ () throws(SocketError) in try reader.readLine() }) {
                if line.allSatisfy({ $0 == UInt8(ascii: " ") }) { continue }
                let response = await respond(to: line)
                let bytes = try ControlCodec.encodeLine(response)
                try await BlockingThreads.shared.run { () throws(SocketError) in try connection.writeAll(bytes) }
            }
        } catch let error as SocketError where error.code == .timedOut {
            logger.debug("status client idle, closing", metadata: ["error": "\(error)"])
        } catch {
            logger.debug("status client failed", metadata: ["error": "\(error)"])
        }
    }

    /// Parses one request line and asks the control for the answer; never throws, every
    /// failure becomes an error response.
    func respond(to line: [UInt8]) async -> ControlResponse {
        let request: ControlRequest
        do {
            request = try ControlCodec.decode(ControlRequest.self, from: line)
        } catch {
            count(command: "invalid", ok: false)
            return .failure(
                AgentControlError(
                    code: .badRequest,
                    message: "expected {\"command\": one of \(ControlRequest.Command.allCases.map(\.rawValue).joined(separator: ", "))}"
                )
            )
        }
        let response: ControlResponse
        do {
            switch request.command {
            case .status:
                response = ControlResponse(ok: true, status: try await control.status())
            case .sos:
                response = ControlResponse(ok: true, alert: try await control.triggerSOS(discreet: request.discreet ?? false))
            case .safe:
                guard let reason = request.reason else {
                    response = .failure(
                        AgentControlError(
                            code: .badRequest,
                            message: "safe needs a reason: \(CancelReasonNames.all)"
                        )
                    )
                    break
                }
                response = ControlResponse(ok: true, alert: try await control.markSafe(reason: reason))
            case .pause:
                response = ControlResponse(ok: true, monitoring: try await control.pauseMonitoring())
            case .resume:
                response = ControlResponse(ok: true, monitoring: try await control.resumeMonitoring())
            case .taxi:
                guard let event = request.taxi else {
                    response = .failure(
                        AgentControlError(
                            code: .badRequest,
                            message: "taxi needs one of \(TaxiStateMachine.Event.allCases.map(\.rawValue).joined(separator: ", "))"
                        )
                    )
                    break
                }
                response = ControlResponse(ok: true, profile: try await control.taxi(event))
            case .runJoin:
                guard let code = request.code, RunParticipation.isValidCode(code) else {
                    response = .failure(AgentControlError(code: .badRequest, message: "run_join needs a code of 4-32 A-Z 0-9 -"))
                    break
                }
                response = ControlResponse(
                    ok: true,
                    profile: try await control.joinRun(code: code, show: request.show ?? false, shareHealth: request.health ?? false)
                )
            case .runCheckIn:
                response = ControlResponse(ok: true, profile: try await control.checkInToRun())
            case .ride:
                guard let action = request.ride else {
                    response = .failure(
                        AgentControlError(
                            code: .badRequest,
                            message: "ride needs one of \(ControlRequest.RideAction.allCases.map(\.rawValue).joined(separator: ", "))"
                        )
                    )
                    break
                }
                var answer = ControlResponse(ok: true)
                answer.ride = try await control.ride(action)
                response = answer
            }
        } catch let error as AgentControlError {
            response = .failure(error)
        } catch {
            response = .failure(AgentControlError(code: .internal, message: "\(error)"))
        }
        count(command: request.command.rawValue, ok: response.ok)
        if request.command != .status {
            logger.info(
                "control command",
                metadata: ["control.command": "\(request.command.rawValue)", "control.ok": "\(response.ok)"]
            )
        }
        return response
    }

    private func count(command: String, ok: Bool) {
        Counter(
            label: AgentMetricNames.controlRequests,
            dimensions: [("command", command), ("result", ok ? "ok" : "error")],
            factory: metricsFactory
        ).increment()
    }
}

enum CancelReasonNames {
    static var all: String { CancelReason.allCases.map(\.rawValue).joined(separator: ", ") }
}
