// tpm-probe: SecuredKey as an app uses it, in a process of its own (TPMTests, IntegrationTests'
// TPM suite): `tpm-probe [TAG]` prints whether a TPM is available, whether SecuredKey(applicationTag:)
// made a key, whether a round trip through it works, and whether any tpm2-tss library is mapped
// into the process (/proc/self/maps), one `name=value` a line.
import Foundation
import PingStorage

let tag = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "tpm-probe"
print("available=\(SecuredKey.isAvailable())")
let key = SecuredKey(applicationTag: tag)
print("key=\(key == nil ? "nil" : "made")")
if let key {
    let plaintext = Data("tpm-probe".utf8)
    print("roundtrip=\(key.encrypt(data: plaintext).flatMap { key.decrypt(data: $0) } == plaintext)")
}
let maps = (try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8)) ?? ""
print("tss-mapped=\(maps.contains("libtss2"))")
