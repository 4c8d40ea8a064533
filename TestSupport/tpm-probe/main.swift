// tpm-probe: SecuredKey as an app uses it, in a process of its own (TPMTests, IntegrationTests'
// TPM suite): `tpm-probe [TAG]` prints whether a TPM is available, whether SecuredKey(applicationTag:)
// made a key, whether a round trip through it works, and whether any tpm2-tss library is mapped
// into the process (/proc/self/maps), one `name=value` a line; with TPM_PROBE_TIMING set, also
// whether its two TPM calls answered within the TPM's timeout (`answered-within-timeout=`).
//
// `tpm-probe --encryptor ACCOUNT` instead saves and reads back a value through
// KeychainStorage<String> with SecuredKeyEncryptor (default configuration: keys bound to the TPM
// when one answers) and prints `roundtrip=` and `tss-mapped=`; the app is TPM_PROBE_APP when set.
import Foundation
import PingStorage

if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--encryptor" {
    if let app = ProcessInfo.processInfo.environment["TPM_PROBE_APP"], !app.isEmpty { try AppIdentity.set(app) }
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        let storage = KeychainStorage<String>(account: CommandLine.arguments[2], encryptor: SecuredKeyEncryptor()!)
        do {
            try await storage.save(item: "tpm-probe")
            print("roundtrip=\(try await storage.get() == "tpm-probe")")
        } catch {
            print("error=\(error)")
        }
        done.signal()
    }
    done.wait()
} else {
    let tag = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "tpm-probe"
    let started = ContinuousClock.now
    let available = SecuredKey.isAvailable()
    let key = SecuredKey(applicationTag: tag)
    // How long the two calls took, without this process's start-up: under the TPM's timeout
    // (10 s) when neither waited for a TPM that cannot answer.
    let answeredWithinTimeout = ContinuousClock.now - started < .seconds(10)
    print("available=\(available)")
    print("key=\(key == nil ? "nil" : "made")")
    if ProcessInfo.processInfo.environment["TPM_PROBE_TIMING"] != nil { print("answered-within-timeout=\(answeredWithinTimeout)") }
    if let key {
        let plaintext = Data("tpm-probe".utf8)
        print("roundtrip=\(key.encrypt(data: plaintext).flatMap { key.decrypt(data: $0) } == plaintext)")
    }
}
let maps = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
print("tss-mapped=\(maps.contains("libtss2"))")
