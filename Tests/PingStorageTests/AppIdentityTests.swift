import Foundation
import Testing
@testable import PingStorage

@Suite("App identity: where it comes from")
struct AppIdentityTests {
    let info = "[Application]\nname=org.example.Flat\nruntime=runtime/org.freedesktop.Platform/x86_64/23.08\n\n[Instance]\ninstance-id=1\n"

    @Test func aSandboxsIdComesBeforeTheProgramsPath() {
        #expect(AppIdentity.detect(environment: ["FLATPAK_ID": "org.example.Flat"], flatpakInfo: info, executable: "/app/bin/x")
                == AppIdentity(id: "org.example.Flat", source: .flatpak))
        #expect(AppIdentity.detect(environment: [:], flatpakInfo: info, executable: "/app/bin/x")
                == AppIdentity(id: "org.example.Flat", source: .flatpak), "/.flatpak-info's [Application] name")
        #expect(AppIdentity.detect(environment: ["SNAP_NAME": "snappy"], flatpakInfo: nil, executable: "/snap/snappy/42/usr/bin/x")
                == AppIdentity(id: "snappy", source: .snap))
    }

    /// Environment variables are inherited by every child: a program started from a Flatpak IDE
    /// has its FLATPAK_ID, one started from a snap's shell its SNAP_NAME, one started by an
    /// AppImage its APPIMAGE. None counts without the sandbox's own evidence.
    @Test func inheritedSandboxVariablesWithoutTheirEvidenceAreIgnored() {
        let program = AppIdentity(id: "/usr/bin/tool", source: .executable)
        #expect(AppIdentity.detect(environment: ["FLATPAK_ID": "org.example.IDE"], flatpakInfo: nil, executable: "/usr/bin/tool")
                == program, "on the host: no /.flatpak-info")
        #expect(AppIdentity.detect(environment: ["FLATPAK_ID": "org.example.Other"], flatpakInfo: info, executable: "/app/bin/x")
                == AppIdentity(id: "org.example.Flat", source: .flatpak), "in a sandbox, /.flatpak-info is the source")
        #expect(AppIdentity.detect(environment: ["FLATPAK_ID": "org.example.IDE"], flatpakInfo: "[Instance]\n", executable: "/usr/bin/tool")
                == program, "a /.flatpak-info without a name: no id to agree with")
        #expect(AppIdentity.detect(environment: ["SNAP_NAME": "snappy"], flatpakInfo: nil, executable: "/usr/bin/tool") == program)
        #expect(AppIdentity.detect(environment: ["SNAP_NAME": "snappy"], flatpakInfo: nil, executable: "/snap/other/1/bin/tool")
                == AppIdentity(id: "/snap/other/1/bin/tool", source: .executable), "another snap's executable")
        #expect(AppIdentity.detect(environment: ["SNAP_NAME": "../snappy"], flatpakInfo: nil, executable: "/snap/../snappy/x")
                == AppIdentity(id: "/snap/../snappy/x", source: .executable))
        let image = ["APPIMAGE": "/home/u/Apps/Tool.AppImage", "APPDIR": "/tmp/.mount_Tool8xQ2"]
        #expect(AppIdentity.detect(environment: image, flatpakInfo: nil, executable: "/usr/bin/tool", isMountPoint: { _ in true })
                == program, "not run from the image's mount")
        #expect(AppIdentity.detect(environment: image, flatpakInfo: nil, executable: "/tmp/.mount_Tool8xQ2/usr/bin/tool",
                                   isMountPoint: { _ in false })
                == AppIdentity(id: "/tmp/.mount_Tool8xQ2/usr/bin/tool", source: .executable), "APPDIR is no mount")
        #expect(AppIdentity.detect(environment: ["APPIMAGE": "/home/u/Apps/Tool.AppImage"], flatpakInfo: nil,
                                   executable: "/tmp/.mount_Tool8xQ2/usr/bin/tool", isMountPoint: { _ in true })
                == AppIdentity(id: "/tmp/.mount_Tool8xQ2/usr/bin/tool", source: .executable), "no APPDIR")
    }

    /// An AppImage runs from a random mount point (/tmp/.mount_XXXX): its identity is the image's
    /// own path, so it keeps its items from run to run.
    @Test func anAppImageIsItsImageNotItsMountPoint() {
        let mount = "/tmp/.mount_Tool8xQ2"
        #expect(AppIdentity.detect(environment: ["APPIMAGE": "/home/u/Apps/Tool.AppImage", "APPDIR": mount + "/"], flatpakInfo: nil,
                                   executable: mount + "/usr/bin/tool", isMountPoint: { $0 == mount })
                == AppIdentity(id: "/home/u/Apps/Tool.AppImage", source: .executable))
        #expect(AppIdentity.detect(environment: [:], flatpakInfo: nil, executable: "/usr/bin/tool")
                == AppIdentity(id: "/usr/bin/tool", source: .executable))
        let mountinfo = "36 35 98:0 / /mnt1 rw - ext3 /dev/root rw\n990 29 0:61 / /tmp/.mount_Tool\\040App rw - fuse.Tool ro\n"
        #expect(AppIdentity.mountPoints(mountinfo: mountinfo) == ["/mnt1", "/tmp/.mount_Tool App"])
    }

    /// A program started as `ld-linux-x86-64.so.2 PROGRAM` has the loader as /proc/self/exe; its
    /// identity is the program the loader mapped (at the auxiliary vector's AT_PHDR).
    @Test func theProgramTheDynamicLoaderRunsIsTheIdentity() {
        for loader in ["/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1", "/lib/ld-musl-x86_64.so.1", "/usr/bin/ld.so"] {
            #expect(AppIdentity.isDynamicLoader(loader), "\(loader)")
        }
        #expect(!AppIdentity.isDynamicLoader("/usr/bin/ld") && !AppIdentity.isDynamicLoader("/usr/bin/tool"))
        let maps = """
            55555dde9000-55555de0a000 rw-p 00000000 00:00 0                          [heap]
            7f8140767000-7f814078d000 r--p 00000000 fe:00 333151                     /usr/lib/x86_64-linux-gnu/libc.so.6
            7f8140956000-7f8140957000 r--p 00000000 fe:00 16245306                   /home/u/my tool (deleted)
            7f8140957000-7f8140958000 r-xp 00001000 fe:00 16245306                   /home/u/my tool (deleted)
            """
        #expect(AppIdentity.mappedFile(containing: 0x7f81_4095_6040, maps: maps) == "/home/u/my tool")
        #expect(AppIdentity.mappedFile(containing: 0x5555_5de0_0000, maps: maps) == nil, "no file there")
        #expect(AppIdentity.mappedFile(containing: 0x1000, maps: maps) == nil)
    }

    @Test func aFlatpakInfoWithoutAnApplicationNameIsNoId() {
        #expect(AppIdentity.flatpakApplicationName("[Instance]\nname=not-this\n") == nil)
        #expect(AppIdentity.flatpakApplicationName("[Application]\nname=\n") == nil)
        #expect(AppIdentity.flatpakApplicationName("  [Application]  \n  name=org.example.Spaced  \n") == "org.example.Spaced")
    }

    @Test func anIdMustBeNonEmptyWithoutNul() throws {
        #expect(throws: KeychainError.self) { try AppIdentity("") }
        #expect(throws: KeychainError.self) { try AppIdentity("a\u{0}b") }
        #expect(try AppIdentity("com.example.App").source == .setByApp)
    }

    /// A configuration's app wins over the process's; two configurations differing only by app keep
    /// apart (their items, their lock keys).
    @Test func aConfigurationsAppScopesItsItems() {
        let a = KeychainConfiguration(app: "com.example.A"), b = KeychainConfiguration(app: "com.example.B")
        #expect(a.appIdentity.id == "com.example.A" && a.appIdentity.source == .setByApp)
        #expect(KeychainConfiguration().appIdentity == AppIdentity.current)
        let (rulesA, rulesB) = (AccountRules(account: "x", configuration: a), AccountRules(account: "x", configuration: b))
        #expect(rulesA.lockKey != rulesB.lockKey)
        #expect(rulesA.itemAttributes[AppIdentity.attribute] == "com.example.A")
        #expect(rulesA.belongsToAccount(["service": a.service, "account": "x", AppIdentity.attribute: "com.example.A"]))
        #expect(!rulesA.belongsToAccount(["service": a.service, "account": "x", AppIdentity.attribute: "com.example.B"]))
        #expect(rulesA.belongsToAccount(["service": a.service, "account": "x"]), "no app's: 1.x's, other tools'")
        #expect(rulesA.ownership(of: ["service": a.service, "account": "x"]) == .unowned)
        #expect(rulesA.ownership(of: ["service": a.service, "account": "x", AppIdentity.attribute: "com.example.A"]) == .own)
    }
}
