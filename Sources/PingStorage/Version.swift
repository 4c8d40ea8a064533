// The package version: the one place it is defined. `ping-keyring --version`, its man page and
// CHANGELOG.md's newest entry (a test checks) follow it.

/// The version of PingStorage for Linux, `MAJOR.MINOR.PATCH` (semantic versioning).
public enum PingStorageVersion {
    /// `3.0.1`.
    public static let current = "3.0.1"
}
