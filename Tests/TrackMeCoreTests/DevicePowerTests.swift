import Testing
import TrackMeCore

@Suite("the wearable's own power")
struct DevicePowerTests {
    typealias Supply = DevicePower.Supply

    @Test("a battery's charge and status, as the kernel writes them (with their newlines)")
    func battery() {
        let discharging = DevicePower(supplies: [Supply(name: "BAT0", type: "Battery\n", capacity: "57\n", status: "Discharging\n")])
        #expect(discharging == DevicePower(percent: 57, source: .battery))
        #expect(discharging?.onBattery == true)
        let charging = DevicePower(supplies: [Supply(name: "BAT0", type: "Battery\n", capacity: "63\n", status: "Charging\n")])
        #expect(charging == DevicePower(percent: 63, source: .charging))
        let full = DevicePower(supplies: [Supply(name: "BAT0", type: "Battery\n", capacity: "100\n", status: "Full\n")])
        #expect(full == DevicePower(percent: 100, source: .full))
    }

    @Test("a UPS board counts as the battery; an online mains or USB supply means external power")
    func upsAndMains() {
        let ups = DevicePower(supplies: [Supply(name: "ups", type: "UPS\n", capacity: "40\n", status: "Discharging\n")])
        #expect(ups == DevicePower(percent: 40, source: .battery))
        // A gauge that says "Unknown" while the charger's supply is online: it is charging.
        let withCharger = DevicePower(supplies: [
            Supply(name: "usb", type: "USB\n", online: "1\n"),
            Supply(name: "BAT0", type: "Battery\n", capacity: "70\n", status: "Unknown\n"),
        ])
        #expect(withCharger == DevicePower(percent: 70, source: .charging))
        let mainsOnly = DevicePower(supplies: [Supply(name: "AC", type: "Mains\n", online: "1\n")])
        #expect(mainsOnly == DevicePower(percent: nil, source: .mains))
        #expect(DevicePower(supplies: [Supply(name: "AC", type: "Mains\n", online: "0\n")]) == nil)
        #expect(DevicePower(supplies: []) == nil)
    }

    @Test("garbage, out-of-range and missing values are skipped, never trusted or trapped on")
    func garbage() {
        for capacity in ["abc", "250", "-3", "", "\u{0}", "57.5", "99999999999999999999999"] as [String?] + [nil] {
            let power = DevicePower(supplies: [Supply(name: "BAT0", type: "Battery", capacity: capacity, status: "Discharging")])
            #expect(power == DevicePower(percent: nil, source: .battery), "\(String(describing: capacity))")
        }
        // A second battery that gives its charge wins over one that does not.
        let two = DevicePower(supplies: [
            Supply(name: "BAT0", type: "Battery", capacity: "oops", status: "Discharging"),
            Supply(name: "BAT1", type: "Battery", capacity: "33", status: "Discharging"),
        ])
        #expect(two == DevicePower(percent: 33, source: .battery))
        #expect(DevicePower(supplies: [Supply(name: "x", type: "Wireless", capacity: "10", status: "Discharging")]) == nil)
    }

    @Test("low and critical with hysteresis; the last heartbeat once per discharge; external power ends both")
    func watch() {
        var watch = PowerWatch()
        func on(_ percent: Int) -> DevicePower { DevicePower(percent: percent, source: .battery) }
        #expect(watch.receive(on(25)) == [])
        #expect(watch.receive(on(20)) == [.level(.low)])
        // Hovering at the limit does not blink the warning on and off.
        #expect(watch.receive(on(21)) == [])
        #expect(watch.receive(on(23)) == [])
        #expect(watch.receive(on(24)) == [.level(.normal)])
        #expect(watch.receive(on(19)) == [.level(.low)])
        #expect(watch.receive(on(5)) == [.level(.critical), .sendLastHeartbeat])
        #expect(watch.receive(on(4)) == [])
        #expect(watch.receive(on(7)) == [])
        #expect(watch.receive(on(9)) == [.level(.low)])
        #expect(watch.receive(on(5)) == [.level(.critical)], "one last heartbeat per discharge")
        #expect(watch.receive(DevicePower(percent: 6, source: .charging)) == [.level(.normal)])
        #expect(watch.receive(on(5)) == [.level(.critical), .sendLastHeartbeat])
        // No battery information at all: nothing to warn about.
        #expect(watch.receive(nil) == [.level(.normal)])
        #expect(watch.receive(DevicePower(percent: nil, source: .battery)) == [])
    }
}
