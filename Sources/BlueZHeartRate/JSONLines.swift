public import TrackMeCore

/// The one-line JSON the CLI verbs print (`hrm decode`, `hrm watch`, `scan --json`), written by
/// hand so the key order is fixed and the agent needs no Foundation for it.
public enum JSONLines {
    /// `{"bpm":72,"contact":"detected","energy_kj":null,"rr":[843],"rr_ms":[823]}`
    public static func reading(_ reading: HeartRateReading) -> String {
        let energy = reading.energyExpendedKilojoules.map(String.init) ?? "null"
        return "{\"bpm\":\(reading.bpm),\"contact\":\(string(reading.contact.rawValue)),\"energy_kj\":\(energy),"
            + "\"rr\":\(array(reading.rrIntervals.map(Int.init))),\"rr_ms\":\(array(reading.rrMilliseconds))}"
    }

    /// `rssi` is null when the controller could not measure it.
    public static func strap(_ strap: DiscoveredStrap) -> String {
        "{\"address\":\(string(strap.address.description)),\"address_type\":\(string(strap.addressType.rawValue)),"
            + "\"name\":\(strap.name.map(string) ?? "null"),\"rssi\":\(strap.signalStrength.map(String.init) ?? "null"),"
            + "\"services\":[\(strap.services.map { string(BluetoothUUID($0).description) }.joined(separator: ","))]}"
    }

    /// `{"event":"name",...}` with the given fields, already JSON-encoded.
    public static func event(_ name: String, _ fields: [(String, String)] = []) -> String {
        "{\"event\":\(string(name))" + fields.map { ",\(string($0.0)):\($0.1)" }.joined() + "}"
    }

    public static func string(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let digits = Array("0123456789abcdef")
                out += "\\u00" + String(digits[Int(scalar.value >> 4)]) + String(digits[Int(scalar.value & 0xF)])
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    static func array(_ values: [Int]) -> String {
        "[" + values.map(String.init).joined(separator: ",") + "]"
    }

    static func milliseconds(_ duration: Duration) -> String {
        String(duration.milliseconds)
    }
}
