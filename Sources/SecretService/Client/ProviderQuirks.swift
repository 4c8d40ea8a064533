import Waiting
import DBusTransport
/// What providers do that the Secret Service specification does not say, and how the client copes:
/// the one place for it. Each entry names the provider and version it was seen with (see
/// dbus-test/providers/PROVIDERS.md), and what would let it go.
enum ProviderQuirks {
    // MARK: Sessions

    /// Opens a session, coping with a KWallet 5.103 fault: when the encrypted session cannot be
    /// negotiated it may offer `plain` instead, so a plain session is tried again twice before it
    /// is accepted (calls then refuse it unless the client allows plain transport).
    ///
    /// Two more KWallet faults are avoided in ``SessionCrypto`` rather than coped with here: it
    /// rejects a client public key shorter than 128 bytes (ours are always padded to 128), and it
    /// derives its key from a shared secret that starts with a zero byte with that byte dropped,
    /// where libsecret, gnome-keyring and KeePassXC keep it (such a session is never used).
    static func openSession(on bus: ProviderBus, owner: String, deadline: Deadline) async throws(SecretServiceError) -> SessionCrypto {
        var plainSessions = 0
        while true {
            let session = try await SessionCrypto.open(on: bus, owner: owner, deadline: deadline)
            if session.isPlain, plainSessions < 2 {
                plainSessions += 1
                session.close(on: bus, owner: owner)
                SecretServiceDiagnostics.report(.warning, "The keyring service offered only a plain session (a KWallet quirk): asking again")
                continue
            }
            return session
        }
    }

    // MARK: Collections

    /// How many answers of "/" to `ReadAlias("default")` it takes before the client believes there
    /// is no default collection and creates one, which asks the person for a new keyring's password.
    ///
    /// GNOME Keyring 42.1 (the code is unchanged through 50.0) registers each new client in an idle
    /// callback that can run after the client's first calls are handled. A call handled before is
    /// treated as coming from no client: `ReadAlias` answers "/" although the login keyring is
    /// there (CI met it once among 200 processes starting four at a time), and `OpenSession` aborts
    /// the daemon (gnome-keyring's own bug, which many clients hit; no client can prevent it: see
    /// Providers.md). The second answer comes after the registration. A provider that truly has no
    /// default collection costs one more round trip, on the first run only.
    static let answersBeforeNoDefaultCollection = 2

    // MARK: Secrets

    /// Whether a secret that came back empty, or that the session could not decrypt, must be
    /// checked against the lock state before it is believed.
    ///
    /// KWallet 5.103, locked, answers GetSecret with an empty secret structure instead of
    /// IsLocked (and an undecodable one when the session is encrypted); and about one KWallet DH
    /// exchange in 200 derives a different key on each side without either noticing, so an
    /// unlocked item's secret then cannot be decrypted. The two are told apart by the item's and
    /// its collection's `Locked` properties: locked goes through the unlock policy, unlocked and
    /// undecodable means a new session (`.disconnected`, which the client retries on).
    static func needsLockCheck(decoded: SecretValue?) -> Bool {
        decoded == nil || decoded?.bytes.isEmpty == true
    }

    /// How long to wait before reading an unlocked item's empty secret again, or nil to believe it:
    /// KWallet 5.103 creates an item before it sets its secret, so another process can read it
    /// empty for a moment (four processes saving one account at once did). GNOME Keyring and
    /// KeePassXC create an item with its secret in one step and are believed; providers not known
    /// are read again. The second answer is returned as it is.
    static func pauseBeforeRereadingEmptySecret(_ kind: ProviderKind) -> Duration? {
        kind == .gnomeKeyring || kind == .keepassxc ? nil : .milliseconds(100)
    }

    /// Whether a write to an item (its secret, attributes or label, or its deletion) must first
    /// check that the item is unlocked: KWallet 5.103 accepts all of them on a locked wallet
    /// without answering IsLocked, so a write would change a keyring the user locked. GNOME
    /// Keyring and KeePassXC answer IsLocked themselves and are spared the extra round trip;
    /// providers not known are checked.
    static func checksLockBeforeWriting(_ kind: ProviderKind) -> Bool {
        kind != .gnomeKeyring && kind != .keepassxc
    }

    // MARK: Writing secrets

    /// Whether a written secret must be read back and compared before the write is reported done.
    ///
    /// KWallet 5.103 gets a different session key from about 1 DH exchange in 600 for no known
    /// reason (PROVIDERS.md), and nothing fails when the session opens. A write through such a
    /// session is decrypted with the wrong key: when the padding happens to check out (1 in 256)
    /// `SetSecret` and `CreateItem` store the garbage and report success; otherwise `SetSecret`
    /// is refused ("Can't find session", the old secret kept) and `CreateItem` is refused after
    /// creating the item with an empty secret. So on KWallet, and on providers not known, the
    /// secret is read back through the same session (one more round trip) and compared
    /// (``SecretServiceClient/writeVerified(_:starting:_:_:operation:_:)``). GNOME Keyring and
    /// KeePassXC have not been seen to disagree on a session's key (KeePassXC: 1,000 DH round
    /// trips, PROVIDERS.md) and are spared it: their writes cost what they did.
    static func verifiesWrites(_ kind: ProviderKind) -> Bool {
        kind != .gnomeKeyring && kind != .keepassxc
    }

    /// How many times a write that did not read back is made in all, each on a new session (the
    /// call's deadline still bounds them): a mis-keyed session is rare, three in a row would
    /// mean something else is wrong.
    static let verifiedWriteAttempts = 3

    // MARK: Attributes

    /// Attributes KeePassXC 2.7 computes for every item and refuses in a write (InvalidArgs):
    /// `Uuid`, `Path`, `TOTP`. Setting attributes there merges, so leaving them out loses nothing.
    static let providerOwnedAttributes: Set<String> = ["Uuid", "Path", "TOTP"]

    /// The attributes to try after `error` refused `attributes`, or nil when there is nothing
    /// left to try.
    static func attributesAfterRefusal(_ attributes: [String: String], _ error: SecretServiceError) -> [String: String]? {
        guard error.code == .providerError, attributes.keys.contains(where: providerOwnedAttributes.contains) else {
            return nil
        }
        SecretServiceDiagnostics.report(.info, "The keyring service refused the attributes it computes itself (a KeePassXC quirk): writing without them")
        return attributes.filter { !providerOwnedAttributes.contains($0.key) }
    }

    // MARK: Announcements

    /// Whether the provider announces every secret written in place (SetSecret) with `ItemChanged`:
    /// KWallet 5.103 does (measured); GNOME Keyring 42.1 announces items created and deleted, never
    /// a SetSecret. KeePassXC 2.7.4 usually announces one (twelve `ItemChanged`, before its answer
    /// or, in a trace of 150 while it kept saving, half of the time just after it) but not always
    /// while it is saving its database: dbus-monitor of a failing run of the cache test
    /// (2026-12-05) shows a SetSecret answered with no `ItemChanged` at all, so silence proves
    /// nothing there. Where this is false, another process's save of an existing item may not be
    /// heard, and what a process remembers of it is checked again by reading it.
    static func announcesSecretChanges(_ kind: ProviderKind) -> Bool { kind == .kwallet }

    // MARK: Prompts

    /// Whether a prompt of this kind may be sent `Prompt.Dismiss` (when its call gives up, or when
    /// prompts are turned off and it is never shown).
    ///
    /// GNOME Keyring 42.1 (and its code to this day, gkd-secret-unlock.c) aborts when an unlock
    /// prompt is dismissed while any unlock prompt is on screen, its own or another program's:
    /// `mark_as_complete` runs the next queued unlock, which is the one being shown, and
    /// `perform_next_unlock` asserts it has none in progress ("assertion failed: (!self->current)").
    /// Every client of the keyring then loses it, and it comes back locked. So an unlock prompt of
    /// GNOME Keyring is never dismissed: one not shown is left unused (the provider drops it with
    /// our connection), one shown stays on screen until the person answers it, and a later unlock
    /// waits behind it in GNOME Keyring's own queue. Its creation prompt (CreateCollection) is
    /// another object and is dismissed as everywhere. What would let it go: a GNOME Keyring that
    /// pops only itself off its queue when dismissed.
    static func dismissesPrompt(_ kind: PromptKind, on provider: ProviderKind) -> Bool {
        !(kind == .unlock && provider == .gnomeKeyring)
    }

    // MARK: Creating items

    /// The attributes a new item is created with: on KeePassXC, without those it computes for
    /// every item (``providerOwnedAttributes``). A CreateItem naming another item's `Uuid` (as a
    /// copy of an item read from KeePassXC does) is answered there with an access dialog that is
    /// dismissed headless; KeePassXC computes them for the new item anyway.
    static func attributesToCreate(_ attributes: [String: String], _ kind: ProviderKind) -> [String: String] {
        guard kind == .keepassxc, attributes.keys.contains(where: providerOwnedAttributes.contains) else { return attributes }
        return attributes.filter { !providerOwnedAttributes.contains($0.key) }
    }

    /// Whether `CreateItem(replace: true)` must be emulated: KeePassXC 2.7.4 answers a replace of
    /// an item another D-Bus client created with an access dialog that never completes headless
    /// (fixed in 2.7.6). The client then searches for the item with the same attributes and
    /// writes its secret in place (SetSecret) instead; the item keeps its label.
    static func emulatesReplace(_ kind: ProviderKind) -> Bool { kind == .keepassxc }
}
