extension KeychainError {
    /// A stable one-word name of the case (`locked`, `timedOut`, …), for logs, scripts and tests.
    public var kind: String {
        switch self {
        case .unableToSave: "unableToSave"
        case .unableToRetrieve: "unableToRetrieve"
        case .unableToDelete: "unableToDelete"
        case .noSessionBus: "noSessionBus"
        case .noSecretService: "noSecretService"
        case .collectionNotFound: "collectionNotFound"
        case .locked: "locked"
        case .promptDismissed: "promptDismissed"
        case .timedOut: "timedOut"
        case .corruptItem: "corruptItem"
        case .invalidArgument: "invalidArgument"
        case .insecureTransport: "insecureTransport"
        case .providerError: "providerError"
        }
    }
}
