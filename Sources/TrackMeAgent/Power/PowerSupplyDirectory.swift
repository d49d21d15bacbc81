import Foundation
package import TrackMeCore

/// The kernel's `power_supply` class as files (`/sys/class/power_supply/<name>/type`,
/// `capacity`, `status`, `online`; Documentation/ABI/testing/sysfs-class-power). Only reads
/// text: what it means is `DevicePower(supplies:)`'s to decide.
package struct PowerSupplyDirectory: Sendable {
    let path: String

    package init(path: String) { self.path = path }

    /// Every supply's attribute files; empty when the directory is absent (a board without
    /// supply nodes). A file that cannot be read (drivers answer EIO while a gauge settles) is nil.
    package func read() -> [DevicePower.Supply] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [] }
        return names.sorted().map { name in
            let directory = (path as NSString).appendingPathComponent(name)
            func attribute(_ file: String) -> String? {
                guard let data = FileManager.default.contents(atPath: (directory as NSString).appendingPathComponent(file)),
                    data.count <= 256
                else { return nil }
                return String(decoding: data, as: UTF8.self)
            }
            return DevicePower.Supply(
                name: name,
                type: attribute("type"),
                capacity: attribute("capacity"),
                status: attribute("status"),
                online: attribute("online")
            )
        }
    }
}
