#if canImport(Glibc)
import Glibc
#endif
internal import DBusTransport

/// Which TPM connection (tpm2-tss TCTI) to use, chosen explicitly: tpm2-tss's own loader tries
/// several in turn and logs an error for each one missing on a machine without a TPM.
///
/// `PINGSTORAGE_TPM_TCTI` decides when set:
/// - `device` or `device:PATH`: the kernel's resource manager, `/dev/tpmrm0` unless PATH is given
///   (members of the `tss` group may open it on most distributions);
/// - `tabrmd` or `tabrmd:CONF`: tpm2-abrmd on D-Bus, CONF being its TCTI configuration
///   (`bus_type=session`, `bus_name=...`; the system bus by default);
/// - `none`: no TPM.
///
/// Unset: `/dev/tpmrm0` when it can be opened, else tpm2-abrmd when it owns its name on the
/// system bus, else none. A choice is made only once its device opens or its name has an owner,
/// so that nothing of tpm2-tss is loaded where no TPM can answer.
///
/// Thread-safety: a value; ``resolve(_:)`` blocks (an open(2), a D-Bus round trip with a 2 s
/// timeout): the `TPM` thread calls it.
package enum TPMChoice: Sendable, Equatable {
    case device(path: String)
    case tabrmd(configuration: String)
    /// No TPM, and why (for logs and errors).
    case none(reason: String)

    /// The environment variable that chooses.
    package static let environmentVariable = "PINGSTORAGE_TPM_TCTI"
    /// The kernel resource manager's device.
    package static let defaultDevice = "/dev/tpmrm0"

    /// The tpm2-tss TCTI library of the choice (loaded with dlopen by name).
    var library: String? {
        switch self {
        case .device: "libtss2-tcti-device.so.0"
        case .tabrmd: "libtss2-tcti-tabrmd.so.0"
        case .none: nil
        }
    }

    /// The TCTI configuration string.
    var configuration: String {
        switch self {
        case .device(let path): path
        case .tabrmd(let configuration): configuration
        case .none: ""
        }
    }

    /// The choice for the value of `PINGSTORAGE_TPM_TCTI` (nil: unset), with `opens` and
    /// `tabrmdAnswers` telling whether a device opens and tpm2-abrmd answers (tests give their own).
    package static func resolve(
        _ setting: String?,
        opens: (String) -> Bool = deviceOpens,
        tabrmdAnswers: (String) -> Bool = tabrmdOwnsItsName
    ) -> TPMChoice {
        guard let setting, !setting.isEmpty else {
            if opens(defaultDevice) { return .device(path: defaultDevice) }
            if tabrmdAnswers("bus_type=system") { return .tabrmd(configuration: "bus_type=system") }
            return .none(reason: "no TPM: \(defaultDevice) cannot be opened and tpm2-abrmd is not on the system bus "
                         + "(set \(environmentVariable) to choose another connection)")
        }
        let (kind, rest) = setting.firstIndex(of: ":").map { (String(setting[..<$0]), String(setting[setting.index(after: $0)...])) }
            ?? (setting, "")
        switch kind {
        case "none":
            return .none(reason: "no TPM: \(environmentVariable)=none")
        case "device":
            let path = rest.isEmpty ? defaultDevice : rest
            return opens(path) ? .device(path: path)
                : .none(reason: "no TPM: \(path) cannot be opened (\(environmentVariable)=\(setting); is the user in the tss group?)")
        case "tabrmd":
            let configuration = rest.isEmpty ? "bus_type=system" : rest
            return tabrmdAnswers(configuration) ? .tabrmd(configuration: configuration)
                : .none(reason: "no TPM: tpm2-abrmd does not answer (\(environmentVariable)=\(setting))")
        default:
            return .none(reason: "\(environmentVariable)=\(setting) is not a TPM connection this library knows: "
                         + "use device[:PATH], tabrmd[:CONFIGURATION] or none")
        }
    }

    /// Whether `path` opens for reading and writing (then closed at once).
    package static func deviceOpens(_ path: String) -> Bool {
        let descriptor = open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        close(descriptor)
        return true
    }

    /// Whether tpm2-abrmd's bus name (`bus_name`, default `com.intel.tss2.Tabrmd`) has an owner on
    /// the bus of `bus_type` (default system) of a tabrmd TCTI configuration. Asked on a private
    /// connection closed afterwards (``BlockingBus/nameHasOwner(_:onBusAt:timeout:)``: it blocks
    /// the calling thread, the TPM's, for 2 s at most); false when the bus cannot be reached.
    package static func tabrmdOwnsItsName(_ configuration: String) -> Bool {
        var busType = "system", busName = "com.intel.tss2.Tabrmd"
        for pair in configuration.split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            if parts[0] == "bus_type" { busType = parts[1] }
            if parts[0] == "bus_name" { busName = parts[1] }
        }
        let address: String?
        switch busType {
        case "session": address = getenv("DBUS_SESSION_BUS_ADDRESS").map { String(cString: $0) }
        case "system": address = getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) } ?? "unix:path=/run/dbus/system_bus_socket"
        default: address = nil
        }
        guard let address, !address.isEmpty else { return false }
        return BlockingBus.nameHasOwner(busName, onBusAt: address, timeout: .seconds(2))
    }
}
