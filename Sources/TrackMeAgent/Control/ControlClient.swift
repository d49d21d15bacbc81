import TrackMeCore
import TrackMeSystem

/// The CLI's side of the control socket: one connection, one request, one response.
public enum ControlClient {
    /// Sends `request` to the agent at `socketPath` and returns its response. Throws
    /// `SocketError` when the agent is not running or does not answer within `timeout`.
    public static func send(
        _ request: ControlRequest,
        socketPath: String,
        timeout: Duration = .seconds(10)
    ) async throws
        -> ControlResponse
    {
        let milliseconds = Int(timeout.milliseconds)
        let line = try ControlCodec.encodeLine(request)
        let answer = try await BlockingThreads.shared.run { () throws(SocketError) -> [UInt8] in
            let socket = try Socket.connectUnixStream(path: socketPath)
            defer { socket.close() }
            try socket.setTimeouts(milliseconds: max(1, milliseconds))
            try socket.writeAll(line)
            socket.shutdownWrite()
            guard let response = try LineReader(socket: socket, maximumLineLength: 1 << 20).readLine() else {
                throw SocketError(code: .connectionClosed, context: socketPath)
            }
            return response
        }
        return try ControlCodec.decode(ControlResponse.self, from: answer)
    }
}
