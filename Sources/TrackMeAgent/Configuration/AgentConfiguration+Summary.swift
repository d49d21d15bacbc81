import TrackMeCore

extension AgentConfiguration {
    /// What `config check` prints after "ok": the values that matter in the field, one per
    /// line, defaults included, so a person sees what the agent will actually do.
    public var summaryLines: [String] {
        var lines: [String] = []
        lines.append("device      \(server.deviceID)")
        var person = "person      \(self.person.name), age \(self.person.age)"
        if let resting = self.person.restingHeartRate { person += ", resting \(resting) bpm" }
        if let minimum = self.person.minimumHeartRate { person += ", min \(minimum) bpm" }
        if let maximum = self.person.maximumHeartRate { person += ", max \(maximum) bpm" }
        lines.append(person)
        let target: String
        switch strap.selection {
        case .nearest: target = "nearest 0x180D strap"
        case .address(let address): target = "\(address) (\(strap.addressType.rawValue))"
        }
        switch strap.transport {
        case .l2cap:
            lines.append("strap       \(target) on \(strap.adapter) via l2cap")
        case .socketPair(let simulated):
            lines.append("strap       simulated: \(simulated.tracePath) at pace \(YAMLSection.format(simulated.pace))")
        }
        lines.append("gpsd        \(gpsd.host):\(gpsd.port)")
        lines.append("store       \(store.path) (budget \(store.diskBudgetBytes) bytes)")
        var encryption = "encryption  \(store.encryption.rawValue)"
        if store.encryption != .off {
            encryption += ": credential \(store.keyCredential)"
            if let keyFile = store.keyFile { encryption += ", else \(keyFile)" }
        }
        lines.append(encryption)
        lines.append("server      \(server.url) (token \(server.tokenFile))")
        if !server.fallbackURLs.isEmpty { lines.append("failover    \(server.fallbackURLs.joined(separator: ", "))") }
        var sosLine = "sos         "
        if sos.rules.isEmpty && sos.countdownSeconds == nil {
            sosLine += "engine defaults"
        } else {
            var parts: [String] = []
            if let countdown = sos.countdownSeconds { parts.append("countdown \(YAMLSection.format(countdown)) s") }
            let names = sos.rules.keys.map(\.rawValue).sorted()
            if !names.isEmpty { parts.append("overrides for \(names.joined(separator: ", "))") }
            sosLine += parts.joined(separator: "; ")
        }
        lines.append(sosLine)
        if let command = fallback.command {
            lines.append("fallback    \(command.joined(separator: " ")) after \(YAMLSection.format(fallback.afterSeconds)) s")
        } else {
            lines.append("fallback    none")
        }
        var outputs: [String] = []
        if let led = feedback.led { outputs.append("LED \(LEDClassDevice(led).directory)") }
        if let command = feedback.command {
            outputs.append("hook \(command.joined(separator: " ")) (killed after \(YAMLSection.format(feedback.commandTimeoutSeconds)) s)")
        }
        lines.append("feedback    " + (outputs.isEmpty ? "none" : outputs.joined(separator: "; ")))
        if let device = button.device {
            lines.append("button      key \(button.keyCode) on \(device), long press \(YAMLSection.format(button.longPressSeconds)) s = SOS")
        } else {
            lines.append("button      none")
        }
        lines.append("battery     warn below \(strap.batteryWarningPercent)%")
        lines.append("status      \(status.socketPath)")
        lines.append("metrics     " + (metrics.enabled ? "http://127.0.0.1:\(metrics.port)/metrics" : "off"))
        lines.append("logging     \(logging.level)")
        lines.append("shutdown    \(YAMLSection.format(shutdown.graceSeconds)) s grace")
        return lines
    }
}
