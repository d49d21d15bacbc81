import CBlueZ
import Glibc
import SystemPackage
import TrackMeSystem

/// Why an LE scan could not run.
public struct HCIScanError: Error, Hashable, Sendable, CustomStringConvertible {
    public var detail: String
    public var description: String { detail }
}

/// LE scanning through a raw HCI socket (libbluetooth). The thin shell: it opens the adapter,
/// sets active scan parameters, enables scanning, and reads LE Meta events with `poll` on a
/// non-blocking descriptor on a dedicated thread; parsing is `AdvertisingReport`'s. Needs
/// CAP_NET_RAW and CAP_NET_ADMIN (see hardware/BLE-ON-A-PI.md).
public enum HCIScanner {
    /// Scans for `duration` on `clock` and returns the straps (devices advertising 0x180D) seen,
    /// or every LE device with `includeAll`.
    public static func scan(
        adapter: String?,
        duration: Duration,
        includeAll: Bool = false,
        clock: any Clock<Duration> = ContinuousClock()
    ) async throws -> [DiscoveredStrap] {
        let stream = reports(adapter: adapter)
        return try await withThrowingTaskGroup(of: StrapScanResults?.self) { group in
            group.addTask {
                var results = StrapScanResults()
                // Ends (returns nil) when the group is cancelled at the end of the scan window.
                for try await report in stream { results.add(report) }
                return results
            }
            group.addTask {
                try? await clock.sleep(for: duration)
                return nil
            }
            while let value = try await group.next() {
                if let results = value {
                    group.cancelAll()
                    return includeAll ? results.allDevices : results.straps
                }
                group.cancelAll()
            }
            return []
        }
    }

    /// Advertising reports as they arrive, until the consumer stops iterating.
    public static func reports(adapter: String?) -> AsyncThrowingStream<AdvertisingReport, any Error> {
        let (stream, continuation) = AsyncThrowingStream<AdvertisingReport, any Error>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let stop = StopFlag()
        continuation.onTermination = { _ in stop.raise() }
        BlockingThreads.shared.start {
            do {
                try scanLoop(adapter: adapter, stop: stop) { continuation.yield($0) }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        return stream
    }

    /// One non-blocking read; nil when nothing is there after all (`EAGAIN`).
    private static func readAvailable(_ hci: FileDescriptor, into buffer: inout [UInt8]) throws(SystemError) -> Int? {
        do {
            return try SystemError.system("read(hci)") { try buffer.withUnsafeMutableBytes { try hci.read(into: $0) } }
        } catch {
            if error.errno == .resourceTemporarilyUnavailable { return nil }
            throw error
        }
    }

    private static func scanLoop(adapter: String?, stop: StopFlag, emit: (AdvertisingReport) -> Void) throws {
        let deviceID = adapter.map { hci_devid($0) } ?? hci_get_route(nil)
        guard deviceID >= 0 else { throw HCIScanError(detail: "no Bluetooth adapter \(adapter ?? "(default)")") }
        let hci = FileDescriptor(rawValue: try SystemError.retrying("hci_open_dev") { hci_open_dev(deviceID) })
        let descriptor = OwnedFileDescriptor(hci)
        defer { descriptor.close() }
        // libbluetooth's calls take the descriptor as a C int.
        let dd = hci.rawValue
        // Active scan, 10 ms interval and window, public own address, accept all.
        try SystemError.retrying("hci_le_set_scan_parameters") {
            hci_le_set_scan_parameters(dd, 0x01, UInt16(0x0010).littleEndian, UInt16(0x0010).littleEndian, 0x00, 0x00, 1000)
        }
        // The filter goes on before scanning starts: hci_send_req restores it after the enable
        // command completes, so a report arriving right after the enable is queued, not lost
        // (seen in the VM: hardware/btmon/agent-scan-missed-report.btmon.txt).
        var filter = hci_filter()
        hci_filter_clear(&filter)
        hci_filter_set_ptype(HCI_EVENT_PKT, &filter)
        hci_filter_set_event(EVT_LE_META_EVENT, &filter)
        try SystemError.retrying("setsockopt(HCI_FILTER)") {
            setsockopt(dd, SOL_HCI, HCI_FILTER, &filter, socklen_t(MemoryLayout<hci_filter>.size))
        }
        try SystemError.retrying("hci_le_set_scan_enable") { hci_le_set_scan_enable(dd, 0x01, 0x00, 1000) }
        defer { _ = hci_le_set_scan_enable(dd, 0x00, 0x00, 1000) }
        let flags = try SystemError.retrying("fcntl(F_GETFL)") { fcntl(dd, F_GETFL) }
        try SystemError.retrying("fcntl(F_SETFL)") { fcntl(dd, F_SETFL, flags | O_NONBLOCK) }

        var buffer = [UInt8](repeating: 0, count: Int(HCI_MAX_EVENT_SIZE) + 1)
        while !stop.isRaised {
            guard try hci.poll(Int16(POLLIN), timeoutMilliseconds: SeqPacketBearer.pollSlice, call: "poll(hci)") != 0 else { continue }
            guard let count = try readAvailable(hci, into: &buffer) else { continue }
            // A report that does not parse is one device's problem, not the scan's.
            for report in (try? AdvertisingReport.reports(fromHCIPacket: Array(buffer[0..<count]))) ?? [] {
                emit(report)
            }
        }
    }
}
