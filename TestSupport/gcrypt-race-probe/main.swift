// gcrypt-race-probe: a fresh process in which libgcrypt's initialisation is raced on purpose, for
// the integration tests of the one process-wide initialisation (GcryptInitializationTests).
//
//   gcrypt-race-probe our-init-held     hold our initialisation inside libgcrypt's FIPS check
//                                        while a Secret Service session opens
//   gcrypt-race-probe session-init-held hold the session's initialisation there while
//                                        SecuredKeyEncryptor() is created
//   gcrypt-race-probe session-first     open a session, then ask who initialised libgcrypt
//   gcrypt-race-probe race ACCOUNT      the first `get` and the first SecuredKeyEncryptor() at once
//   gcrypt-race-probe derive-first      a key derivation (Gcrypt's PBKDF2) is the process's first
//                                        libgcrypt call; then crypto must be available
//
// Prints one line per finding and exits 0 when everything held, 1 otherwise. A held thread is let
// go after 300 ms by a watchdog, so a correct library only waits.
import CAccessGate
import Foundation
import Gcrypt
import PingStorage
import PingStorageCrypto
import SecretService

func startThread(_ body: @escaping @Sendable () -> Void) {
    let thread = Thread { body() }
    thread.start()
}

func releaseLater() {
    startThread {
        usleep(300_000)
        access_gate_release()
    }
}

func fail(_ message: String) -> Never {
    print("FAIL \(message)")
    exit(1)
}

/// Opens a session (the first Secret Service call of the process does).
func openSession() async -> String {
    do {
        _ = try await SecretServiceClient().collections()
        return "ok"
    } catch {
        return "\(error)"
    }
}

@main
struct Probe {
    static func main() async {
        let arguments = CommandLine.arguments.dropFirst()
        switch arguments.first {
        case "our-init-held":
            access_gate_arm()
            startThread { _ = CryptoLibrary.initialize() }
            guard access_gate_wait_until_holding(5000) == 1 else { fail("no thread reached libgcrypt's FIPS check") }
            releaseLater()
            let session = await openSession()
            print("session: \(session)")
            print("crypto available: \(CryptoLibrary.isAvailable)")
            exit(session == "ok" && CryptoLibrary.isAvailable ? 0 : 1)
        case "session-init-held":
            access_gate_arm()
            let session = Task.detached { await openSession() }
            guard access_gate_wait_until_holding(5000) == 1 else { fail("no thread reached libgcrypt's FIPS check") }
            releaseLater()
            let encryptor = SecuredKeyEncryptor()
            print("encryptor: \(encryptor == nil ? "nil" : "created")")
            let result = await session.value
            print("session: \(result)")
            exit(encryptor != nil && result == "ok" ? 0 : 1)
        case "derive-first":
            // libgcrypt starts initialising itself, unfinished, at any first call: the module
            // must have run the one initialisation before.
            let derived = try? Hashing.pbkdf2SHA256(SecretBytes(copying: Array("master".utf8)), salt: [1, 2, 3, 4],
                                                   iterations: 1, count: 16)
            print("derived: \(derived == nil ? "no" : "yes")")
            print("crypto available: \(CryptoLibrary.isAvailable) (\(Libgcrypt.unavailabilityReason ?? "ok"))")
            let session = await openSession()
            print("session: \(session)")
            exit(derived != nil && CryptoLibrary.isAvailable && session == "ok" ? 0 : 1)
        case "session-first":
            let session = await openSession()
            print("session: \(session)")
            print("initialised by this package: \(CryptoLibrary.didInitializeLibrary)")
            exit(session == "ok" && CryptoLibrary.didInitializeLibrary ? 0 : 1)
        case "race":
            guard let account = arguments.dropFirst().first else { fail("race needs an account") }
            let start = DispatchSemaphore(value: 0)
            let getResult = Task.detached { () -> String in
                start.wait()
                do {
                    _ = try await KeychainStorage<String>(account: account).get()
                    return "ok"
                } catch {
                    return "\(error)"
                }
            }
            let encryptorCreated = Task.detached { () -> Bool in
                start.wait()
                return SecuredKeyEncryptor() != nil
            }
            start.signal()
            start.signal()
            let (get, created) = (await getResult.value, await encryptorCreated.value)
            print("get: \(get)")
            print("encryptor: \(created ? "created" : "nil")")
            exit(get == "ok" && created ? 0 : 1)
        default:
            fail("usage: gcrypt-race-probe our-init-held | session-init-held | session-first | derive-first | race ACCOUNT")
        }
    }
}
