import SystemPackage

// Writing a pattern to the LED (its one system call), apart from the rest of
// FeedbackOutputs.swift so that the configuration (which names LEDs and patterns) builds
// without swift-system, as the `config-yaml` fuzz target compiles it.
extension LEDClassDevice {
    public func show(_ pattern: LEDPattern) throws(FeedbackOutputError) {
        switch pattern {
        case .off:
            try write("trigger", "none")
            try write("brightness", "0")
        case .on:
            try write("trigger", "none")
            try write("brightness", String(maximumBrightness))
        case .blink(let on, let off):
            // The timer trigger makes delay_on and delay_off appear; then they are set.
            try write("trigger", "timer")
            try write("delay_on", String(on))
            try write("delay_off", String(off))
        }
    }

    /// One write of `value` and a newline, as `echo value > file` does (O_TRUNC, never O_CREAT).
    private func write(_ file: String, _ value: String) throws(FeedbackOutputError) {
        let path = directory + "/" + file
        let bytes = Array((value + "\n").utf8)
        // One write, not `writeAll`: a sysfs attribute takes its whole value in one write.
        let result = Result { () throws -> Int in
            let fd = try FileDescriptor.open(path, .writeOnly, options: [.truncate, .closeOnExec])
            return try fd.closeAfter { try bytes.withUnsafeBytes { try fd.write($0) } }
        }
        switch result {
        case .success(let written) where written == bytes.count: return
        case .success(let written):
            throw FeedbackOutputError(code: .ledWrite, path: path, message: "short write (\(written) of \(bytes.count) bytes)")
        case .failure(let error):
            throw FeedbackOutputError(code: .ledWrite, path: path, message: (error as? Errno)?.description ?? "\(error)")
        }
    }
}
