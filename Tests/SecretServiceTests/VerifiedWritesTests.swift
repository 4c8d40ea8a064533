import Foundation
import Testing
@testable import SecretService

@Suite("Verified writes: which providers, and the comparison")
struct VerifiedWritesTests {
    /// GNOME Keyring and KeePassXC are spared the read-back (their round trips are pinned by the
    /// round-trip tests); KWallet, which can corrupt a write, and providers not known pay it.
    @Test func writesAreReadBackOnKWalletAndUnknownProvidersOnly() {
        #expect(!ProviderQuirks.verifiesWrites(ProviderKind(executable: "/usr/bin/gnome-keyring-daemon")))
        #expect(!ProviderQuirks.verifiesWrites(ProviderKind(executable: "/usr/bin/keepassxc")))
        #expect(ProviderQuirks.verifiesWrites(ProviderKind(executable: "/usr/bin/kwalletd5")))
        #expect(ProviderQuirks.verifiesWrites(ProviderKind(executable: "/usr/bin/kwalletd6")))
        #expect(ProviderQuirks.verifiesWrites(ProviderKind(executable: "/usr/bin/python3")))
        #expect(ProviderQuirks.verifiesWrites(ProviderKind(executable: nil)))
        #expect(ProviderQuirks.verifiedWriteAttempts >= 2, "a mismatch is written again at least once")
    }

    @Test func theComparisonIsOfEveryByte() {
        let written = Data("secret".utf8)
        #expect(SecretServiceClient.constantTimeEquals(written, Data("secret".utf8)))
        #expect(!SecretServiceClient.constantTimeEquals(written, Data("secreT".utf8)), "the last byte counts")
        #expect(!SecretServiceClient.constantTimeEquals(written, Data("Secret".utf8)), "the first byte counts")
        #expect(!SecretServiceClient.constantTimeEquals(written, Data("secret\0".utf8)), "the length counts")
        #expect(!SecretServiceClient.constantTimeEquals(written, Data()), "an empty ghost is not the secret")
        #expect(SecretServiceClient.constantTimeEquals(Data(), Data()))
        // Slices (non-zero start index) compare by content.
        let sliced = Data("xxsecret".utf8).dropFirst(2)
        #expect(SecretServiceClient.constantTimeEquals(written, sliced))
    }
}
