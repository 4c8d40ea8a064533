import BenchmarkSupport
import Foundation
import PingStorage

/// Stores the filler population through KeychainStorage, untimed.
func storeFillerPopulation() async throws {
    for account in Bench.fillerAccounts {
        let storage = KeychainStorage<Token>(account: account, configuration: Bench.configuration)
        try await storage.save(item: Token.make(account: account))
    }
}
