import Foundation
import Testing
@testable import PingKeyringCore

/// The executable answers some command lines before Swift concurrency starts; these must be
/// exactly the ones that need no keyring, with the outcome `run` gives.
@Suite("Answered before the async runtime starts: help, version, completion, manual, usage errors")
struct ImmediateOutcomeTests {
    static let answeredAtOnce: [[String]] = [
        ["--help"], ["-h"], ["help"], ["get", "--help"], ["doctor", "--help"], ["--version"],
        ["completion", "bash"], ["completion", "zsh"], ["manual"],
        ["get"], ["frobnicate"], ["list", "--bogus"], ["get", "--json"],
    ]
    static let needTheKeyring: [[String]] = [
        ["list"], ["get", "--account", "A"], ["save", "--account", "A"], ["delete", "--account", "A"],
        ["doctor"], ["list", "--json"], ["get", "--account", "A", "--backend", "secret-service"],
    ]

    @Test(arguments: answeredAtOnce)
    func theOutcomeIsTheOneRunGives(arguments: [String]) async {
        let immediate = PingKeyring.outcomeWithoutTheKeyring(arguments: arguments)
        let full = await PingKeyring.run(arguments: arguments, environment: [:]) { Data() }
        #expect(immediate == full)
    }

    @Test(arguments: needTheKeyring)
    func commandsThatNeedTheKeyringAreLeftToRun(arguments: [String]) {
        #expect(PingKeyring.outcomeWithoutTheKeyring(arguments: arguments) == nil)
    }
}
