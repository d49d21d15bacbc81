/// Splits a stream socket's bytes into `\n`-terminated lines, keeping what follows a line for
/// the next call.
///
/// `@unchecked Sendable` because a connection handler hands it from one blocking call to the
/// next (each on some Dispatch thread, strictly one after another, ordered by the awaits in
/// between); it is never used by two threads at once.
package final class LineReader: @unchecked Sendable {
    private let socket: Socket
    private var buffer: [UInt8] = []
    private let maximumLineLength: Int

    package init(socket: Socket, maximumLineLength: Int = 64 * 1024) {
        self.socket = socket
        self.maximumLineLength = maximumLineLength
    }

    /// The next line without its terminator (a trailing `\r` is dropped too), or nil when the
    /// peer closed the connection cleanly between lines.
    package func readLine() throws(SocketError) -> [UInt8]? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                var line = Array(buffer[..<newline])
                buffer.removeSubrange(...newline)
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                return line
            }
            guard buffer.count <= maximumLineLength else {
                throw SocketError(code: .messageTooLong, context: socket.label)
            }
            let chunk = try socket.read(maximum: 4096)
            if chunk.isEmpty {
                if buffer.isEmpty { return nil }
                throw SocketError(code: .connectionClosed, context: socket.label)
            }
            buffer += chunk
        }
    }
}
