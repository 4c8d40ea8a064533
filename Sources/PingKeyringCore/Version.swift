// The package version: the one place it is defined.
// (Here for now; it moves to PingStorage once the lower layers settle. Everything that shows a
// version, `ping-keyring --version` and the man page included, reads it from here.)

/// The version of PingStorage for Linux, `MAJOR.MINOR.PATCH`.
public enum PingStorageVersion {
    /// `1.0.0`.
    public static let current = "1.0.0"
}
