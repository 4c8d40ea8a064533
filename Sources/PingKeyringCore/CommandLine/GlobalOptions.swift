import PingStorage

/// The options every command shares.
struct GlobalOptions: Sendable, Equatable {
    /// `--collection`; nil: `$PINGSTORAGE_COLLECTION`, else the `default` alias (KeychainConfiguration's rule).
    var collection: KeychainConfiguration.Collection?
    /// `--timeout`; nil: the library's default (25 s).
    var timeout: Duration?
    /// `--prompt-timeout`; nil: the library's default (5 minutes).
    var promptTimeout: Duration?
    /// `--no-prompt`.
    var noPrompt = false
    /// `--json`.
    var json = false
    /// `--backend`; nil: not given, which is ``KeychainConfiguration/Backend/automatic`` (the
    /// library's default: `$PINGSTORAGE_BACKEND`, else automatic selection).
    var backend: KeychainConfiguration.Backend?
    /// `--app`: the app (``AppIdentity/id``) whose items the commands act on; nil: see
    /// ``KeyringSettings/scopedApp``.
    var app: String?
    /// `--verbose`: the `backend: …` line on stderr.
    var verbose = false
}
