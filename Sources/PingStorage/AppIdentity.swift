#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Locking

/// Which app a process's items and keys belong to: the counterpart of an iOS app's bundle
/// identifier, which gives every app a keychain of its own. Every item ``KeychainStorage`` writes
/// and every ``SecuredKeyEncryptor`` key carries it (attribute `pingstorage-app`), and a storage
/// sees its own app's items only (and items no app owns: those of other tools, and those of
/// PingStorage 1.x, see <doc:KeychainMapping>).
///
/// Where it comes from, in this order:
/// 1. ``set(_:)``, called by the app at start-up, as a bundle identifier is set (`com.example.App`);
/// 2. a sandbox's own id: `FLATPAK_ID` (or the `name` of `/.flatpak-info`'s `[Application]`), or
///    `SNAP_NAME`;
/// 3. the program itself: its executable's path (an AppImage's own path, `$APPIMAGE`, not the
///    random mount point it runs from), so two programs that set nothing are two apps and the same
///    program keeps its items across runs. Moving or renaming the program makes it another app;
///    `ping-keyring doctor` warns when this fallback is in use.
///
/// Two programs share items on purpose (an app and its command-line helper: the counterpart of an
/// access group) by setting the same identity, or by giving a configuration the same
/// ``KeychainConfiguration/app``.
///
/// Thread-safety: safe from any thread; ``set(_:)`` applies to the calls that start after it.
public struct AppIdentity: Sendable, Hashable, CustomStringConvertible {
    /// The value of the `pingstorage-app` attribute.
    public let id: String
    /// Where ``id`` came from.
    public let source: Source

    /// Where an identity came from.
    public enum Source: String, Sendable, Hashable {
        /// ``AppIdentity/set(_:)``, or a configuration's ``KeychainConfiguration/app``.
        case setByApp
        /// The Flatpak sandbox's application id.
        case flatpak
        /// The snap's name.
        case snap
        /// The program's executable (or AppImage) path: the fallback.
        case executable
    }

    /// The attribute every item and key of an app carries.
    public static let attribute = "pingstorage-app"

    /// `id`, as given by the app.
    /// - Throws: ``KeychainError/Reason/invalidArgument(_:)`` when `id` is empty or holds a NUL.
    public init(_ id: String) throws {
        guard !id.isEmpty, !id.utf8.contains(0) else {
            throw KeychainError.unableToSave(.invalidArgument(.init(
                message: "An app identity must be a non-empty string without NUL characters, such as com.example.App.")))
        }
        self.init(id: id, source: .setByApp)
    }

    /// `id` from `source`, unchecked (the library's own detection, and ping-keyring's tests).
    package init(id: String, source: Source) {
        self.id = id
        self.source = source
    }

    /// `id (source)`.
    public var description: String { "\(id) (\(source.rawValue))" }

    private static let chosen = Locked<AppIdentity?>(nil)

    /// Sets the process's identity, as a bundle identifier: call it at start-up, before the first
    /// storage or encryptor call; calls that start afterwards use it.
    /// - Throws: ``KeychainError/Reason/invalidArgument(_:)`` for an empty id or one with a NUL.
    public static func set(_ id: String) throws {
        let identity = try AppIdentity(id)
        chosen.withLock { $0 = identity }
    }

    /// The process's identity: the one set, else the sandbox's, else the program's.
    public static var current: AppIdentity {
        if let set = chosen.withLock({ $0 }) { return set }
        return detected
    }

    /// The identity the process has without ``set(_:)`` (read once). Package-wide so that
    /// ping-keyring can tell a sandbox's id (its default app) from the executable fallback (its own path).
    package static let detected: AppIdentity = detect(
        environment: ProcessEnvironment.values(of: ["FLATPAK_ID", "SNAP_NAME", "APPIMAGE"]),
        flatpakInfo: try? String(contentsOfFile: BackendRule.sandboxMarker, encoding: .utf8),
        executable: executablePath())

    /// The identity for a process with `environment`, the contents of `/.flatpak-info` and the
    /// path of its executable.
    static func detect(environment: [String: String], flatpakInfo: String?, executable: String?) -> AppIdentity {
        if let id = environment["FLATPAK_ID"], !id.isEmpty { return AppIdentity(id: id, source: .flatpak) }
        if let id = flatpakInfo.flatMap(flatpakApplicationName) { return AppIdentity(id: id, source: .flatpak) }
        if let id = environment["SNAP_NAME"], !id.isEmpty { return AppIdentity(id: id, source: .snap) }
        if let image = environment["APPIMAGE"], image.hasPrefix("/") { return AppIdentity(id: image, source: .executable) }
        return AppIdentity(id: executable ?? "unknown-program", source: .executable)
    }

    /// `name` in the `[Application]` group of a `.flatpak-info` file.
    static func flatpakApplicationName(_ info: String) -> String? {
        var inApplication = false
        for line in info.split(separator: "\n", omittingEmptySubsequences: true) {
            let text = String(line.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
            if text.hasPrefix("[") { inApplication = text == "[Application]"; continue }
            guard inApplication, text.hasPrefix("name=") else { continue }
            let name = String(text.dropFirst(5))
            return name.isEmpty || name.utf8.contains(0) ? nil : name
        }
        return nil
    }

    /// The running program's path (`/proc/self/exe`, resolved).
    private static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: 4097)
        let count = readlink("/proc/self/exe", &buffer, 4096)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // A program replaced while it runs reads as "PATH (deleted)": the items are still PATH's.
        return path.hasSuffix(" (deleted)") ? String(path.dropLast(10)) : path
    }
}
