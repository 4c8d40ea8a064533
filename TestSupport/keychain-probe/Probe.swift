// keychain-probe: a second process for the integration tests. It uses KeychainStorage<String>
// exactly as an app would, so tests can check what another process sees and does.
//
//   keychain-probe get ACCOUNT              prints the stored string; exit 1 when there is none
//   keychain-probe save ACCOUNT VALUE
//   keychain-probe delete ACCOUNT
//   keychain-probe hammer ACCOUNT PREFIX N  N saves of PREFIX-0 … PREFIX-(N-1), in order
//   keychain-probe steps ACCOUNT            reads steps from stdin, one per line, in one process:
//                                          get | save VALUE | delete | touch PATH | await PATH
//                                          (await waits for PATH to exist); prints "ok", the value,
//                                          "nil" or "error: KIND" per step and goes on after errors
//   keychain-probe mixed ACCOUNT-PREFIX ACCOUNTS N SEED
//                                          N seeded random save/get/delete on ACCOUNT-PREFIX-0…(ACCOUNTS-1),
//                                          then one final save of each account; values are
//                                          "SEED-i-ACCOUNT" so a reader can tell whose they are
//   keychain-probe identity                prints the process's AppIdentity ("ID (SOURCE)")
//   keychain-probe poll ACCOUNT STOP-FILE APP...
//                                          reads ACCOUNT as each APP in turn (KeychainConfiguration.app),
//                                          again and again until STOP-FILE exists, then once more each;
//                                          prints "APP=VALUE", "APP=nil" or "APP=error: KIND" per read
//   keychain-probe contended-memory        ten saves at once through a cached StorageDelegate over a
//                                          slow in-memory store; prints "contended" and the process's
//                                          threads (ContendedMemory.swift)
// Options (before the command): --service S, --collection C, --timeout-ms N, --no-prompt, --encrypt
// (SecuredKeyEncryptor), --unbound (its keys never bound to the TPM: keyBinding .none), --allow-plain
// (accept an unencrypted transport session), --cache (the storage caches: CacheStrategy.CACHE), --exit-in-move STEP (exit with status 9 at that step of a
// move into the sandbox, as a process killed there: 1 once the file holds the copies, 1 + N after
// the N-th host deletion).
// Errors: exit 3, stderr "error: KIND: message" (KIND is KeychainError.kind); exit 4, stderr
// "error: encryptor: KIND: message" for an EncryptorError (KIND is its kind).
import Foundation
import PingStorage

@main
struct Probe {
    /// A synchronous main that waits for the async work: dispatch_main's sigsuspend on the main
    /// thread crashes valgrind 3.19, and .ci/run runs this probe under valgrind's memcheck.
    static func main() {
        let done = DispatchSemaphore(value: 0)
        // Detached: main() is on the main actor, which this thread is about to block.
        Task.detached {
            await run()
            done.signal()
        }
        done.wait()
    }

    static func run() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        // The app identity the tests give it (theirs, so that they share items), set at start-up as
        // an app sets its own; empty or unset: the probe's own (its executable).
        if let app = ProcessInfo.processInfo.environment["KEYCHAIN_PROBE_APP"], !app.isEmpty {
            do { try AppIdentity.set(app) } catch { usage() }
        }
        var configuration = KeychainConfiguration()
        var encrypt = false
        var cacheStrategy = CacheStrategy.NO_CACHE
        while let option = arguments.first, option.hasPrefix("--") {
            arguments.removeFirst()
            switch option {
            case "--service": configuration.service = take(&arguments)
            case "--collection":
                guard let collection = try? KeychainConfiguration.Collection(parsing: take(&arguments)) else { usage() }
                configuration.collection = collection
            case "--timeout-ms": configuration.timeout = .milliseconds(Int(take(&arguments)) ?? 25_000)
            case "--no-prompt": configuration.allowsPrompts = false
            case "--cache": cacheStrategy = .CACHE
            case "--encrypt": encrypt = true
            case "--unbound": configuration.keyBinding = .none
            case "--allow-plain": configuration.allowsPlainTransport = true
            case "--exit-in-move":
                // Ends the process at that step of a move into the sandbox, as a kill there would.
                guard let step = Int(take(&arguments)) else { usage() }
                KeychainRuntime.exitInMove(atStep: step) { _exit(9) }
            default: usage()
            }
        }
        if arguments == ["identity"] {
            print(AppIdentity.current)
            return
        }
        if arguments == ["contended-memory"] {
            await contendedMemory()
            return
        }
        guard arguments.count >= 2 else { usage() }
        let encryptor: any Encryptor = encrypt ? SecuredKeyEncryptor(configuration: configuration)! : NoEncryptor()
        let storage = KeychainStorage<String>(account: arguments[1], encryptor: encryptor, cacheStrategy: cacheStrategy,
                                              configuration: configuration)
        do {
            switch (arguments[0], arguments.count) {
            case ("get", 2):
                guard let value = try await storage.get() else { exit(1) }
                print(value)
            case ("save", 3):
                try await storage.save(item: arguments[2])
            case ("delete", 2):
                try await storage.delete()
            case ("steps", 2):
                await steps(storage)
            case ("mixed", 5):
                try await mixed(prefix: arguments[1], accounts: Int(arguments[2]) ?? 1, count: Int(arguments[3]) ?? 0,
                                seed: UInt64(arguments[4]) ?? 1, configuration: configuration, encryptor: encryptor)
            case ("poll", 4...):
                await poll(account: arguments[1], stopFile: arguments[2], apps: Array(arguments[3...]),
                           configuration: configuration, encryptor: encryptor)
            case ("hammer", 4):
                for index in 0..<(Int(arguments[3]) ?? 0) {
                    try await storage.save(item: "\(arguments[2])-\(index)")
                }
            default:
                usage()
            }
        } catch let error as KeychainError {
            FileHandle.standardError.write(Data("error: \(error.kind): \(error.errorMessage)\n".utf8))
            exit(3)
        } catch let error as EncryptorError {
            FileHandle.standardError.write(Data("error: encryptor: \(error.kind): \(error.errorMessage)\n".utf8))
            exit(4)
        } catch {
            FileHandle.standardError.write(Data("error: other: \(error)\n".utf8))
            exit(3)
        }
    }

    /// Runs steps from stdin in this one process (so a test can change the provider between them).
    static func steps(_ storage: KeychainStorage<String>) async {
        while let line = readLine() {
            let words = line.split(separator: " ", maxSplits: 1).map(String.init)
            do {
                switch words.first {
                case "get": emit(try await storage.get() ?? "nil")
                case "save": try await storage.save(item: words.count > 1 ? words[1] : ""); emit("ok")
                case "delete": try await storage.delete(); emit("ok")
                case "touch": _ = FileManager.default.createFile(atPath: words[1], contents: nil); emit("ok")
                case "await":
                    while !FileManager.default.fileExists(atPath: words[1]) { try await Task.sleep(for: .milliseconds(20)) }
                    emit("ok")
                default: emit("error: usage")
                }
            } catch let error as KeychainError {
                emit("error: \(error.kind)")
            } catch {
                emit("error: other")
            }
        }
    }

    /// Reads the account as each of `apps` in turn until `stopFile` exists, then once more each: what
    /// another app sees at every moment of a race (a test checks no app ever reads another's value).
    static func poll(account: String, stopFile: String, apps: [String], configuration: KeychainConfiguration,
                     encryptor: any Encryptor) async {
        let storages = apps.map { app in
            var configuration = configuration
            configuration.app = app
            return (app, KeychainStorage<String>(account: account, encryptor: encryptor, configuration: configuration))
        }
        var last = false
        while true {
            last = FileManager.default.fileExists(atPath: stopFile)
            for (app, storage) in storages {
                do {
                    emit("\(app)=\(try await storage.get() ?? "nil")")
                } catch let error as KeychainError {
                    emit("\(app)=error: \(error.kind)")
                } catch {
                    emit("\(app)=error: other")
                }
            }
            if last { return }
        }
    }

    /// Writes a line to stdout at once (unbuffered), so a test can act between steps.
    static func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Deterministic random operations (SplitMix64) so a failing run can be replayed.
    static func mixed(prefix: String, accounts: Int, count: Int, seed: UInt64,
                      configuration: KeychainConfiguration, encryptor: any Encryptor) async throws {
        var state = seed
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let storages = (0..<accounts).map {
            KeychainStorage<String>(account: "\(prefix)-\($0)", encryptor: encryptor, configuration: configuration)
        }
        for index in 0..<count {
            let slot = Int(next() % UInt64(accounts))
            let storage = storages[slot]
            switch next() % 10 {
            case 0..<5: try await storage.save(item: "\(seed)-\(index)-\(storage.account)")
            case 5..<8:
                if let value = try await storage.get(), !value.hasSuffix("-\(storage.account)") {
                    FileHandle.standardError.write(Data("error: foreign value in \(storage.account)\n".utf8))
                    exit(5)
                }
            default: try await storage.delete()
            }
        }
        for storage in storages { try await storage.save(item: "\(seed)-final-\(storage.account)") }
    }

    static func take(_ arguments: inout [String]) -> String {
        guard !arguments.isEmpty else { usage() }
        return arguments.removeFirst()
    }

    static func usage() -> Never {
        FileHandle.standardError.write(Data("usage: keychain-probe [--service S] [--collection C] [--timeout-ms N] [--no-prompt] [--encrypt] [--unbound] get|save|delete|hammer|mixed|poll ACCOUNT [VALUE | PREFIX N | ACCOUNTS N SEED | STOP-FILE APP...]\n".utf8))
        exit(2)
    }
}
