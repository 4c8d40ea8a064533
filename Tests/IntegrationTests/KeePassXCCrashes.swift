import Foundation
import Testing

/// KeePassXC 2.7.4 crashes (SIGSEGV) when a write lands while it saves: its own bug, measured in
/// dbus-test/providers/PROVIDERS.md. The harness keeps the suite's verdict on KeePassXC with it.
extension Harness {
    /// Before a test deletes an item of a mebibyte or more: on KeePassXC, waits until the item's
    /// own save has ended. The harness's KeePassXC database has no recycle bin (a deleted big item
    /// would otherwise stay in the file and make every later save last seconds), so KeePassXC frees
    /// a deleted entry at once, and crashes when its save thread is still writing that entry: a
    /// save of the 16 MiB item lasts about 3 s (crashed in 3 runs of 3 without this wait).
    static func waitUntilSavedBeforeDeletingABigItem() async throws {
        guard provider == "keepassxc" else { return }
        try await waitUntilPersisted()
    }
}
