// accounts-rss COUNT TAG: the memory a process spends on KeychainStorage instances for COUNT
// accounts (the memory of many accounts). pingstorage-benchmark starts it and reads its report.
//
// 1. One warm-up account is saved, read and deleted, so that what every process pays once (the
//    bus connection, the transport session, libgcrypt, the JSON coders) is paid before measuring.
// 2. RSS (/proc/self/statm) is read: "before".
// 3. COUNT storages (accounts `rss-TAG-i`, NO_CACHE) are created and kept, each saves its 2 KiB
//    token once and reads it once; RSS is read again: "after". (after − before) / COUNT is the
//    cost of one account.
// 4. The items are deleted (after measuring) and the storages released.
//
// The items go to the in-memory `session` collection: the process's memory does not depend on the
// collection, and gnome-keyring rewrites the login collection's file on every save, which would
// make the 1,000 saves take about a minute and grow the collection the other sections measure.
//
// Output, one "name value" per line: start_bytes, before_bytes, after_bytes, seconds.
import BenchmarkSupport
import Foundation
import PingStorage

let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[1]), count > 0 else {
    FileHandle.standardError.write(Data("usage: accounts-rss COUNT TAG\n".utf8))
    exit(2)
}
let tag = arguments[2]
let configuration = KeychainConfiguration(service: Bench.service, collection: .session)

do {
    let start = residentSetSize()
    let warmUp = KeychainStorage<Token>(account: "rss-\(tag)-warm-up", configuration: configuration)
    try await warmUp.save(item: Token.make(account: warmUp.account))
    guard try await warmUp.get() != nil else { throw CocoaError(.fileReadNoSuchFile) }
    try await warmUp.delete()
    let before = residentSetSize()

    let clock = ContinuousClock()
    let began = clock.now
    var storages: [KeychainStorage<Token>] = []
    storages.reserveCapacity(count)
    for index in 0..<count {
        let storage = KeychainStorage<Token>(account: "rss-\(tag)-\(index)", configuration: configuration)
        try await storage.save(item: Token.make(account: storage.account))
        guard try await storage.get() != nil else { throw CocoaError(.fileReadNoSuchFile) }
        storages.append(storage)
    }
    let after = residentSetSize()
    let seconds = (clock.now - began) / .seconds(1)

    for storage in storages { try await storage.delete() }
    withExtendedLifetime(warmUp) {}
    print("start_bytes \(start)\nbefore_bytes \(before)\nafter_bytes \(after)\nseconds \(seconds)")
} catch {
    FileHandle.standardError.write(Data("accounts-rss: \(error)\n".utf8))
    exit(2)
}
