#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
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
/// 2. a sandbox's own id: in a Flatpak, the `name` of `/.flatpak-info`'s `[Application]` (an
///    inherited `FLATPAK_ID` alone counts for nothing: a program started from a Flatpak IDE has
///    one); in a snap, `SNAP_NAME`, when the executable is inside that snap (`/snap/NAME/`);
/// 3. the program itself: its executable's path (the program the dynamic loader runs, when it
///    was started as `ld-linux-x86-64.so.2 PROGRAM`; an AppImage's own path, `$APPIMAGE`, when the
///    executable runs from the AppImage's mount, `$APPDIR`, not that random mount point), so two
///    programs that set nothing are two apps and the same program keeps its items across runs.
///    Moving or renaming the program makes it another app; `ping-keyring doctor` warns when this
///    fallback is in use, and `ping-keyring apps` and `move` show and move an old identity's items.
///
/// **A convention among cooperating apps, not an access boundary.** The identity keeps apps built on
/// this package from colliding: the same account names, one app's logout deleting another's tokens,
/// one key for all. It is self-asserted: on a shared keyring any process of the user, including one
/// that claims another app's id, can read and change every item. Only a Flatpak sandbox with the
/// Secret portal separates apps (SECURITY.md).
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
}
