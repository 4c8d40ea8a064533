#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// How a process's identity is found without ``AppIdentity/set(_:)``: a sandbox's id only with the
/// sandbox's own evidence, else the program's path. Environment variables are inherited by every
/// child process (a program started from a Flatpak IDE has the IDE's `FLATPAK_ID`, one started from
/// a snap's shell its `SNAP_NAME`), so none counts on its own.
extension AppIdentity {
    /// The identity the process has without ``set(_:)`` (read once). Package-wide so that
    /// ping-keyring can tell a sandbox's id (its default app) from the executable fallback (its own path).
    package static let detected: AppIdentity = {
        let environment = ProcessEnvironment.values(of: ["FLATPAK_ID", "SNAP_NAME", "APPIMAGE", "APPDIR"])
        return detect(environment: environment,
                      flatpakInfo: try? String(contentsOfFile: BackendRule.sandboxMarker, encoding: .utf8),
                      executable: executablePath(),
                      isMountPoint: { path in
                          // Read only for an AppImage: whether its APPDIR is a mount of its own.
                          procFile("/proc/self/mountinfo").map { mountPoints(mountinfo: $0).contains(path) } ?? false
                      })
    }()

    /// The identity for a process with `environment`, the contents of `/.flatpak-info` (nil when
    /// it has none), the path of its executable, and a way to ask whether a path is a mount point.
    /// - In a Flatpak sandbox (`/.flatpak-info` exists) the file's `[Application]` name is the id;
    ///   `FLATPAK_ID` counts only where it agrees with it, so never on its own.
    /// - `SNAP_NAME` counts only when the executable is inside that snap (`/snap/NAME/…`).
    /// - `APPIMAGE` counts only when the executable runs from the AppImage's mount: `APPDIR` is a
    ///   mount point and holds the executable.
    /// - Otherwise the executable's path.
    static func detect(environment: [String: String], flatpakInfo: String?, executable: String?,
                       isMountPoint: (String) -> Bool = { _ in false }) -> AppIdentity {
        if let info = flatpakInfo, let id = flatpakApplicationName(info) { return AppIdentity(id: id, source: .flatpak) }
        if let snap = environment["SNAP_NAME"], !snap.isEmpty, !snap.contains("/"),
           executable?.hasPrefix("/snap/\(snap)/") == true {
            return AppIdentity(id: snap, source: .snap)
        }
        if let image = environment["APPIMAGE"], image.hasPrefix("/"),
           let mount = environment["APPDIR"].map(withoutTrailingSlash), mount.hasPrefix("/"),
           executable?.hasPrefix(mount + "/") == true, isMountPoint(mount) {
            return AppIdentity(id: image, source: .executable)
        }
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

    /// The running program's path: `/proc/self/exe`, resolved; when that is the dynamic loader
    /// (`ld-linux-x86-64.so.2 PROGRAM`), the program it runs, else every program started that way
    /// would be one app.
    static func executablePath() -> String? {
        guard let exe = resolvedLink("/proc/self/exe") else { return nil }
        guard isDynamicLoader(exe) else { return exe }
        // The loader points the auxiliary vector's AT_PHDR at the program it loaded: the file mapped
        // there is the program, by the absolute path the kernel keeps (argv[0] may be relative).
        guard let headers = auxiliaryValue(3), let maps = procFile("/proc/self/maps"),
              let program = mappedFile(containing: headers, maps: maps), !isDynamicLoader(program) else { return exe }
        return program
    }

    /// Entry `type` of the auxiliary vector as the dynamic loader keeps it (AT_PHDR is 3), through
    /// glibc's `getauxval`, which its Swift module does not show; nil when it has none. The
    /// kernel's copy, `/proc/self/auxv`, still describes the loader when the loader was run as a
    /// program; the loader's own copy describes the program it loaded.
    private static func auxiliaryValue(_ type: UInt) -> UInt? {
        guard let symbol = dlsym(nil, "getauxval") else { return nil }
        let getauxval = unsafeBitCast(symbol, to: (@convention(c) (UInt) -> UInt).self)
        let value = getauxval(type)
        return value == 0 ? nil : value
    }

    /// Whether `path` names a dynamic loader (`ld-linux-x86-64.so.2`, `ld-linux-aarch64.so.1`,
    /// `ld-musl-x86_64.so.1`, `ld.so`).
    static func isDynamicLoader(_ path: String) -> Bool {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return name == "ld.so" || (name.hasPrefix("ld-") && name.contains(".so"))
    }

    /// The file mapped at `address` in `/proc/self/maps`' text (`START-END PERMS OFFSET DEV INODE
    /// PATH`, addresses in hex); nil when no file mapping holds it.
    static func mappedFile(containing address: UInt, maps: String) -> String? {
        for line in maps.split(separator: "\n") {
            // The path is the rest of the line after the fifth field, past the spaces that align it.
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6 else { continue }
            let path = fields[5].drop { $0 == " " }
            let range = fields[0].split(separator: "-")
            guard path.hasPrefix("/"), range.count == 2, let start = UInt(range[0], radix: 16),
                  let end = UInt(range[1], radix: 16), start <= address, address < end else { continue }
            return withoutDeletedSuffix(String(path))
        }
        return nil
    }

    /// The mount points in `/proc/self/mountinfo`'s text (the fifth field, octal escapes such as
    /// `\040` for a space undone).
    static func mountPoints(mountinfo: String) -> Set<String> {
        var points = Set<String>()
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 4 else { continue }
            points.insert(unescapedMountField(fields[4]))
        }
        return points
    }

    private static func unescapedMountField(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "\\"), utf8.count >= 3, let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A `/proc` file's text, read to its end (its size says 0, and a read of one size-sized chunk,
    /// as `String(contentsOfFile:)` does, stops at 4 KiB).
    private static func procFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        // Bounded: these files are a few kilobytes; 4 MiB is far past any real one.
        while bytes.count < 4 << 20 {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return count == 0 ? String(decoding: bytes, as: UTF8.self) : nil }
            bytes += chunk[..<count]
        }
        return nil
    }

    /// The target of the symbolic link at `path` (a `/proc` link: at most PATH_MAX bytes).
    private static func resolvedLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4097)
        let count = readlink(path, &buffer, 4096)
        guard count > 0 else { return nil }
        return withoutDeletedSuffix(String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// A program replaced while it runs reads as "PATH (deleted)": its items are still PATH's.
    private static func withoutDeletedSuffix(_ path: String) -> String {
        path.hasSuffix(" (deleted)") ? String(path.dropLast(10)) : path
    }

    private static func withoutTrailingSlash(_ path: String) -> String {
        path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    }
}
