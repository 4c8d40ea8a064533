import Foundation
import PingStorage
import SecretService
import Testing

extension Integration.Prompter {
    /// The display the person sees (the harness's Xvfb).
    static var display: String? { ProcessInfo.processInfo.environment["DBUS_TEST_DISPLAY"] }

    /// The first run on GNOME Keyring: no keyring at all, and the first save asks GNOME Keyring to
    /// create "Default keyring". The prompter shows its new-keyring dialog (empty title: the person
    /// finds it by its class), the person types the new password twice, and the save and a read
    /// complete.
    @Test(.enabled(if: Harness.provider == "gnome-keyring", "GNOME Keyring's first run"))
    func theFirstRunShowsTheNewKeyringDialogThenSavesAndReads() async throws {
        let fresh = try await FreshGnomeKeyring(display: Self.display)
        async let person = Person.answer(.newPassword("first keyring \(UUID().uuidString.prefix(6))"))
        try await fresh.storage("first").save(item: "saved on the first run")
        let title = try await person
        #expect(title == "", "GNOME's new-keyring dialog has no title")
        #expect(try await fresh.storage("first").get() == "saved on the first run")
        let collections = try await SecretServiceClient(bus: .address(fresh.address)).collections()
        #expect(collections.contains { $0.label == "Default keyring" }, "\(collections)")
    }

    /// Escape on the new-keyring dialog: no keyring, and the error says what the person will see
    /// when they run the program again.
    @Test(.enabled(if: Harness.provider == "gnome-keyring", "GNOME Keyring's first run"))
    func escapeOnTheNewKeyringDialogSaysWhatToDo() async throws {
        let fresh = try await FreshGnomeKeyring(display: Self.display)
        async let person = Person.answer(.escape)
        let error = await keychainError { try await fresh.storage("first").save(item: "x") }
        _ = try await person
        #expect(error?.kind == "collectionNotFound", "\(String(describing: error))")
        #expect(error?.failureReason == "No default keyring exists yet.")
        #expect(error?.detail?.contains("the keyring service's prompt to create one was dismissed") == true,
                "\(String(describing: error?.detail))")
        #expect(error?.recoverySuggestion?.hasPrefix("Create one: run the program again in the desktop session (GNOME "
                                                     + "Keyring shows \"Choose password for new keyring\"") == true,
                "\(String(describing: error?.recoverySuggestion))")
    }

    /// The Task is cancelled while the new-keyring dialog is on screen: the dialog goes away
    /// (GNOME Keyring's creation prompt takes a dismissal), and nothing is created.
    @Test(.enabled(if: Harness.provider == "gnome-keyring", "GNOME Keyring's first run"))
    func cancellingTheTaskTakesTheNewKeyringDialogAway() async throws {
        let fresh = try await FreshGnomeKeyring(display: Self.display)
        let save = Task { try await fresh.storage("first").save(item: "x") }
        try await Person.answer(.look)
        save.cancel()
        await #expect(throws: CancellationError.self) { try await save.value }
        #expect(try await Person.seesNoPrompt(within: 5), "the dialog went away")
        let collections = try await SecretServiceClient(bus: .address(fresh.address)).collections()
        #expect(!collections.contains { $0.label == "Default keyring" }, "\(collections)")
    }

    /// GNOME's prompter installed, but the session bus has no display for it (a login over SSH):
    /// the prompter cannot start, GNOME Keyring dismisses its prompt at once, and the read says
    /// that the prompt could not be shown, within a second, rather than waiting out a limit.
    @Test(.enabled(if: Harness.provider == "gnome-keyring", "GNOME Keyring's prompter"))
    func aPrompterWithoutADisplayFailsAtOnceSayingWhy() async throws {
        let fresh = try await FreshGnomeKeyring(display: nil)
        try await fresh.replaceWithUnlockedLoginKeyring(password: "pw \(UUID().uuidString.prefix(6))")
        try await fresh.storage("locked").save(item: "x")
        let client = SecretServiceClient(bus: .address(fresh.address))
        try await client.lock([try await client.collectionPath(.default)])
        let (error, elapsed) = await timedKeychainError { _ = try await fresh.storage("locked").get() }
        #expect(error?.kind == "promptDismissed", "\(String(describing: error))")
        #expect(error?.failureReason == "The keyring could not show its prompt: GNOME Keyring could not start its prompter: "
                + "this session has no display for it (as over SSH, or on a machine without a desktop).", "\(String(describing: error))")
        #expect(error?.recoverySuggestion?.contains("Unlock it from the desktop session") == true)
        #expect(elapsed < .seconds(1), "at once: \(elapsed)")
    }
}
