import Foundation
import Testing
@testable import PingStorage

@Suite("App identity: where it comes from")
struct AppIdentityTests {
    let info = "[Application]\nname=org.example.Flat\nruntime=runtime/org.freedesktop.Platform/x86_64/23.08\n\n[Instance]\ninstance-id=1\n"

    @Test func aSandboxsIdComesBeforeTheProgramsPath() {
        #expect(AppIdentity.detect(environment: ["FLATPAK_ID": "org.example.Env"], flatpakInfo: info, executable: "/usr/bin/x")
                == AppIdentity(id: "org.example.Env", source: .flatpak))
        #expect(AppIdentity.detect(environment: [:], flatpakInfo: info, executable: "/usr/bin/x")
                == AppIdentity(id: "org.example.Flat", source: .flatpak), "/.flatpak-info's [Application] name")
        #expect(AppIdentity.detect(environment: ["SNAP_NAME": "snappy"], flatpakInfo: nil, executable: "/usr/bin/x")
                == AppIdentity(id: "snappy", source: .snap))
    }

    /// An AppImage runs from a random mount point (/tmp/.mount_XXXX): its identity is the image's
    /// own path, so it keeps its items from run to run.
    @Test func anAppImageIsItsImageNotItsMountPoint() {
        #expect(AppIdentity.detect(environment: ["APPIMAGE": "/home/u/Apps/Tool.AppImage"], flatpakInfo: nil,
                                   executable: "/tmp/.mount_Tool8xQ2/usr/bin/tool")
                == AppIdentity(id: "/home/u/Apps/Tool.AppImage", source: .executable))
        #expect(AppIdentity.detect(environment: [:], flatpakInfo: nil, executable: "/usr/bin/tool")
                == AppIdentity(id: "/usr/bin/tool", source: .executable))
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
    }
}
