import ArgumentParser
import Foundation
import NIOSSL
import TrackMeSimulation

/// `trackme-sim bench load --port P --devices N [--seconds 60] [--ca-file CA] [--json]`: an
/// open-loop load on a running `trackme-server` (one instance, or a balancer in front of several;
/// `simulations/bench-load.sh` starts them). N simulated devices each send a batch of about 10
/// readings with its heartbeat every 5 s, spread evenly over the interval, and a few send an
/// alert; each request leaves at its scheduled time whatever the server's latency (a pool of
/// keep-alive connections carries them; when all are busy a request waits, and that wait counts
/// in its latency, which runs from the scheduled time, so a slow server cannot slow the offered
/// load and hide its own queueing). Alerts go on four connections of their own, as a device's
/// alert lane sends them beside its batches, so their latency is the server's alone. Reports the
/// batch latency p50/p99/max, the alerts' p99, what was offered and completed, the readings
/// stored per second, and the generator's own CPU (user + system time of this process over the
/// wall time) so that a generator near a core says so.
///
/// `--saturate` measures the baseline the open-loop figures are divided by: the same devices'
/// batches sent closed-loop (each connection sends the next as soon as the last is answered) for
/// the same time, with nothing else, so the server's whole intake rate on this machine. The knee
/// (the most devices whose batch p99 stays within the goal) over that rate is a ratio that
/// travels between machines where a device count does not.
struct LoadBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Open-loop load on a running trackme-server: N devices at their real cadence; batch latency p99."
    )

    @Option(help: "Port of the server or balancer on 127.0.0.1.")
    var port: Int

    @Option(help: "The server's admin token (enrols the devices).")
    var adminToken: String

    @Option(help: "Simulated devices.")
    var devices = 1000

    @Option(help: "Seconds of load after enrolment.")
    var seconds = 60

    @Option(help: "Seconds between one device's batches.")
    var interval = 5.0

    @Option(help: "Heart-rate readings per batch.")
    var readings = 10

    @Option(help: "Alerts in all, spread over the run.")
    var alerts = 10

    @Option(help: "Keep-alive connections carrying the load.")
    var connections = 256

    @Option(help: "CA file to verify the server with (HTTPS); without it, plain HTTP.")
    var caFile: String?

    @Flag(help: "Closed loop: send batches as fast as the server answers them (the intake rate with nothing else); no alerts.")
    var saturate = false

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() async throws {
        guard devices > 0, seconds > 0, interval > 0, connections > 0 else {
            throw ValidationError("devices, seconds, interval and connections must be positive")
        }
        let tls = try caFile.map { try BenchCertificate.clientContext(trusting: $0) }
        let result = try await LoadBenchmark(
            port: port,
            adminToken: adminToken,
            devices: devices,
            seconds: seconds,
            interval: interval,
            readings: readings,
            alerts: alerts,
            connections: connections,
            saturate: saturate,
            tls: tls
        ).run()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            print(String(decoding: try encoder.encode(result), as: UTF8.self))
        } else {
            print(result.text)
        }
    }
}
