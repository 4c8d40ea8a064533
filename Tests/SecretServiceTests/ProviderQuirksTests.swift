import Testing
@testable import SecretService

@Suite("Provider quirks: what each provider is sent")
struct ProviderQuirksTests {
    /// A copy of an item read from KeePassXC carries the attributes it computes (`Uuid`, `Path`);
    /// created with them, KeePassXC answers with an access dialog, dismissed headless. Elsewhere
    /// they are an app's own attributes and are kept.
    @Test func keePassXCsOwnAttributesAreLeftOutOfANewItemThere() {
        let copied = ["Uuid": "9234f8f693f249dfa5fbb03be011dedb", "Path": "/key", "TOTP": "", "key-id": "00", "Title": "key"]
        #expect(ProviderQuirks.attributesToCreate(copied, ProviderKind(executable: "/usr/bin/keepassxc")) == ["key-id": "00", "Title": "key"])
        #expect(ProviderQuirks.attributesToCreate(copied, ProviderKind(executable: "/usr/bin/gnome-keyring-daemon")) == copied)
        #expect(ProviderQuirks.attributesToCreate(copied, ProviderKind(executable: "/usr/bin/kwalletd5")) == copied)
    }

    /// Silence about an item proves it unchanged only where every SetSecret is announced: KWallet.
    /// GNOME Keyring announces none; KeePassXC none made while it saves its database (a cache of
    /// another process's item then stayed stale: the KeePassXC suite's cache test, about one run
    /// in two).
    @Test func onlyKWalletAnnouncesEverySecretWrittenInPlace() {
        #expect(ProviderQuirks.announcesSecretChanges(ProviderKind(executable: "/usr/bin/kwalletd5")))
        #expect(!ProviderQuirks.announcesSecretChanges(ProviderKind(executable: "/usr/bin/keepassxc")))
        #expect(!ProviderQuirks.announcesSecretChanges(ProviderKind(executable: "/usr/bin/gnome-keyring-daemon")))
    }
}
