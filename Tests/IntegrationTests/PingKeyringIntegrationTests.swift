import Foundation
import PingStorage
import SecretService
import Testing

// The helpers of the ping-keyring tests, whose sections are in PingKeyringIntegrationTests+*.swift.

/// Runs `ping-keyring` (built next to the test binaries) as a process.
@discardableResult
func pingKeyring(_ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
                 timeout: TimeInterval = 60) throws -> ProcessResult {
    try run(Harness.binaryDirectory.appendingPathComponent("ping-keyring").path, arguments, input: input,
            environment: environment, timeout: timeout)
}

/// ``pingKeyring(_:input:environment:timeout:)`` for async tests: the process is awaited on a
/// thread of its own, never on one of Swift's cooperative threads (see the async `run`).
@discardableResult
func runPingKeyring(_ arguments: [String], input: Data? = nil, environment: [String: String]? = nil,
                    timeout: TimeInterval = 60) async throws -> ProcessResult {
    try await run(Harness.binaryDirectory.appendingPathComponent("ping-keyring").path, arguments, input: input,
                  environment: environment, timeout: timeout)
}

/// The top-level JSON object a `--json` run printed on stdout.
func jsonObject(_ result: ProcessResult, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: result.stdout)
    return try #require(object as? [String: Any], "stdout is one JSON object: \(result.output)",
                        sourceLocation: sourceLocation)
}

/// `list --json`, decoded with the documented field names and types.
struct ListJSON: Decodable {
    struct Item: Decodable {
        var account: String
        var service: String
        var label: String
        var item: String
        var collection: String
        var created: String
        var modified: String
        var size: Int
        var contentType: String
        var encrypted: String
        var keyID: String?
        var schema: String?
        /// The item's app; nil: no app's.
        var app: String?
    }
    var collection: String
    var service: String?
    /// The `--app` filter; nil: every app's items.
    var app: String?
    var items: [Item]
}

let defaultService = KeychainConfiguration.defaultService
/// The app the tests' storages and ping-keyring share: outside a sandbox the tool has no app of
/// its own, and the test process's default identity (its executable's path) is no app to name.
let testApp = "com.pingidentity.ping-keyring.tests"
/// The configuration of the tests' storages that share items with `ping-keyring --app testApp`.
let testAppConfiguration = KeychainConfiguration(app: testApp)
/// `--app testApp`, for the tool's commands that write (a save needs an app: see docs/ping-keyring.md, "Apps").
let asTestApp = ["--app", testApp]
/// The `app:` line `get` prints on stderr after the backend line, for an item of `testApp`.
let testAppLine = "app: \(testApp)\n"
let probeService = "com.pingidentity.ping-keyring.doctor"
let keySchema = "com.pingidentity.PingStorage.SecuredKey"
/// The collection the key tests fill: `session` where the provider has one, else the default.
var sessionCollection: String {
    Harness.hasSessionCollection ? "/org/freedesktop/secrets/collection/session" : Harness.defaultCollectionPath
}

/// The key id an envelope names: bytes 5..<21, as 32 lowercase hex digits (README, "Encryption").
func keyID(of envelope: Data) -> String {
    envelope.dropFirst(5).prefix(16).map { String(format: "%02x", $0) }.joined()
}

let envelopeMagic = Data([0x89, 0x50, 0x53, 0x45])

/// The line every item command prints on stderr on the host with --verbose (never on stdout).
let hostBackendLine = "backend: Secret Service (not in a Flatpak sandbox (/.flatpak-info does not exist))\n"

/// The key items of the session collection (secret-tool cannot tell collections apart: it
/// prints item paths without theirs).
func sessionKeyItems(_ attributes: [String: String] = [:]) async throws -> [ItemPath] {
    try await SecretServiceClient().searchItems(matching: attributes.merging(["xdg:schema": keySchema]) { $1 },
                                                in: Harness.scratchCollection).all
}

/// Deletes the key items of the session collection, so that it has no key (the login
/// collection's keys, which other tests' processes use, are left alone).
func clearSessionKeys() async throws {
    let client = SecretServiceClient()
    for path in try await sessionKeyItems() { try await client.deleteItem(path) }
}

/// An app's (``testApp``'s) encryptor with a key cache of its own. `SecuredKeyEncryptor()` instances share one
/// cache per configuration in this process, and another test may have deleted (with secret-tool)
/// the key that cache holds; the service does not matter to the encryptor (the key is found by
/// its schema in the collection; KeychainStorage supplies the service it binds to).
func appEncryptorWithAFreshKeyCache() throws -> SecuredKeyEncryptor {
    try #require(SecuredKeyEncryptor(configuration: KeychainConfiguration(service: "fresh-cache-\(UUID().uuidString)", app: testApp)))
}

extension Integration {
    /// ping-keyring run as a process against the keyring of the test run. The tests are in
    /// PingKeyringIntegrationTests+List, +Encryption, +CommandLine and +Doctor, one file per section.
    @Suite("ping-keyring")
    struct PingKeyring {}
}
