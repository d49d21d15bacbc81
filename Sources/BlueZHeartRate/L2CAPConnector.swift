import CBlueZ
import Glibc
import SystemPackage
import TrackMeCore
import TrackMeSystem

/// Why connecting to a strap over L2CAP failed.
public struct L2CAPConnectError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String
        /// No such adapter (`hci_devid` failed).
        public static let noAdapter = Code(name: "no_adapter")
        /// The strap did not answer within the connect timeout (not advertising, out of range, wrong address).
        public static let notFound = Code(name: "not_found")
        /// The kernel refused or reset the connection.
        public static let failed = Code(name: "failed")
        public var description: String { name }
    }

    public var code: Code
    public var detail: String
    public var description: String { "\(code): \(detail)" }
}

/// The real transport: an L2CAP LE socket on ATT's fixed channel (CID 4), security level low,
/// non-blocking, connected with `poll` on a dedicated thread. This is the only code that touches
/// `sockaddr_l2`; it cannot run on a kernel without Bluetooth (see hardware/BLE-ON-A-PI.md).
public enum L2CAPConnector {
    static let attChannel: UInt16 = 4

    /// A connector for `StrapConnector`: each call opens a new link to `address` from `adapter`
    /// ("hci0"; nil for the first adapter).
    public static func connector(
        adapter: String?,
        address: BluetoothAddress,
        addressType: BluetoothAddressType,
        timeout: Duration = .seconds(10)
    ) -> StrapConnector {
        StrapConnector {
            let stop = StopFlag()
            let bearer = try await withTaskCancellationHandler {
                try await BlockingThreads.shared.run {
                    try connect(adapter: adapter, address: address, addressType: addressType, timeout: timeout, stop: stop)
                }
            } onCancel: {
                stop.raise()
            }
            return StrapConnector.Connection(bearer: bearer, address: address)
        }
    }

    /// A connector that scans for `scanDuration` and connects to the strap with the strongest
    /// signal, scanning again on every reconnect.
    public static func strongestNearby(
        adapter: String?,
        scanDuration: Duration = .seconds(5),
        timeout: Duration = .seconds(10),
        clock: any Clock<Duration> = ContinuousClock()
    ) -> StrapConnector {
        StrapConnector {
            let straps = try await HCIScanner.scan(adapter: adapter, duration: scanDuration, clock: clock)
            var results = straps
            results.sort { ($0.signalStrength ?? Int.min) > ($1.signalStrength ?? Int.min) }
            guard let best = results.first else {
                throw L2CAPConnectError(code: .notFound, detail: "no strap advertising 0x180D within \(scanDuration)")
            }
            return try await connector(adapter: adapter, address: best.address, addressType: best.addressType, timeout: timeout).connect()
        }
    }

    /// Blocking connect (call on a dedicated thread). Polls in short slices so `stop` ends it.
    static func connect(
        adapter: String?,
        address: BluetoothAddress,
        addressType: BluetoothAddressType,
        timeout: Duration,
        stop: StopFlag
    ) throws -> SeqPacketBearer {
        var local = bdaddr_t()
        if let adapter {
            let id = hci_devid(adapter)
            guard id >= 0, hci_devba(id, &local) == 0 else {
                throw L2CAPConnectError(code: .noAdapter, detail: "no Bluetooth adapter \(adapter)")
            }
        }
        let socketFD = FileDescriptor(
            rawValue: try SystemError.retrying("socket(AF_BLUETOOTH)") {
                socket(AF_BLUETOOTH, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_L2CAP)
            }
        )
        let descriptor = OwnedFileDescriptor(socketFD)
        do {
            var source = sockaddr_l2()
            source.l2_family = sa_family_t(AF_BLUETOOTH)
            source.l2_bdaddr = local
            source.l2_cid = attChannel.littleEndian
            source.l2_bdaddr_type = UInt8(BDADDR_LE_PUBLIC)
            try SystemError.retrying("bind(l2cap)") {
                withUnsafePointer(to: &source) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD.rawValue, $0, socklen_t(MemoryLayout<sockaddr_l2>.size)) }
                }
            }
            var security = bt_security()
            security.level = UInt8(BT_SECURITY_LOW)
            try SystemError.retrying("setsockopt(BT_SECURITY)") {
                setsockopt(socketFD.rawValue, SOL_BLUETOOTH, BT_SECURITY, &security, socklen_t(MemoryLayout<bt_security>.size))
            }
            var destination = sockaddr_l2()
            destination.l2_family = sa_family_t(AF_BLUETOOTH)
            let octets = address.littleEndianBytes
            destination.l2_bdaddr.b = (octets[0], octets[1], octets[2], octets[3], octets[4], octets[5])
            destination.l2_cid = attChannel.littleEndian
            destination.l2_bdaddr_type = UInt8(addressType == .public ? BDADDR_LE_PUBLIC : BDADDR_LE_RANDOM)
            let started = withUnsafePointer(to: &destination) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(socketFD.rawValue, $0, socklen_t(MemoryLayout<sockaddr_l2>.size))
                }
            }
            if started != 0 {
                // Not `retrying`: a non-blocking connect goes on in the kernel after EINTR as after
                // EINPROGRESS, and calling it again would fail with EALREADY.
                let code = SystemError.current
                switch code {
                case .nowInProgress, .interrupted: break
                case .hostIsDown, .noRouteToHost, .timedOut:
                    throw L2CAPConnectError(code: .notFound, detail: "\(address): \(SystemError(call: "connect", errno: code))")
                default:
                    throw L2CAPConnectError(code: .failed, detail: SystemError(call: "connect(l2cap)", errno: code).description)
                }
            }
            try waitConnected(socketFD, address: address, timeout: timeout, stop: stop)
        } catch {
            descriptor.close()
            throw error
        }
        return SeqPacketBearer(descriptor: descriptor)
    }

    private static func waitConnected(_ descriptor: FileDescriptor, address: BluetoothAddress, timeout: Duration, stop: StopFlag) throws {
        let slices = max(1, Int(timeout.milliseconds) / Int(SeqPacketBearer.pollSlice))
        for _ in 0..<slices {
            if stop.isRaised { throw CancellationError() }
            let events = try descriptor.poll(Int16(POLLOUT), timeoutMilliseconds: SeqPacketBearer.pollSlice, call: "poll(connect)")
            if events == 0 { continue }
            let error = Errno(rawValue: try descriptor.pendingSocketError())
            switch error {
            case Errno(rawValue: 0): return
            case .hostIsDown, .noRouteToHost, .timedOut:
                throw L2CAPConnectError(code: .notFound, detail: "\(address) did not answer (\(SystemError(call: "connect", errno: error)))")
            default:
                throw L2CAPConnectError(code: .failed, detail: SystemError(call: "connect", errno: error).description)
            }
        }
        throw L2CAPConnectError(code: .notFound, detail: "\(address) did not answer within \(timeout)")
    }
}
