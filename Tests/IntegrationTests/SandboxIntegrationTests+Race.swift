import FileKeyring
import Foundation
import PingStorage
import Testing

extension SandboxIntegration.FileKeyringThroughThePortal {
    /// Two apps in one sandbox's file keyring, racing over an item no app owns that libsecret
    /// stored there (secret-tool inside the sandbox): each ends with its own item, neither ever
    /// reads the other's value, and the item no app owns is as libsecret left it.
    @Test func twoAppsSavingAtOnceOverAnItemNoAppOwnsNeverSeeEachOthersValue() async throws {
        let service = KeychainConfiguration.defaultService
        try await Integration.AppIsolation.raceRounds(10, storeLegacy: { account, value in
            let stored = try await SandboxIntegration.libsecret(["store", "--label=\(account) (1.x)", "service", service, "account", account],
                                                                input: Data(value.utf8))
            #expect(stored.status == 0, "\(stored.stderr)")
        }, itemsOf: { account in
            try await SandboxIntegration.fileKeyring().items(matching: lookup(account)).map {
                ($0.attributes[AppIdentity.attribute], $0.secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) })
            }
        }, clear: { account in
            try await SandboxIntegration.fileKeyring().modify { items throws(FileKeyringError) in
                items.removeAll { $0.matches(lookup(account)) }
            }
        })
    }
}
