import Foundation
import SecretService

/// The Secret Service operations ``KeychainStorage`` needs. ``SecretServiceClient`` is the real
/// one; unit tests supply an in-memory one.
protocol SecretServiceBackend: Sendable {
    func searchItems(matching attributes: [String: String], in collection: CollectionReference?) async throws -> SecretSearchResult
    func itemInfo(_ path: String) async throws -> SecretItemInfo
    func secret(of path: String) async throws -> SecretValue
    func setSecret(_ value: SecretValue, of path: String) async throws
    func updateItem(_ path: String, label: String?, attributes: [String: String]?) async throws
    func createItem(in collection: CollectionReference, label: String, attributes: [String: String],
                    secret: SecretValue, replacing: Bool) async throws -> String
    func deleteItem(_ path: String) async throws
    func collectionInfo(_ collection: CollectionReference) async throws -> SecretCollectionInfo
    func unlock(_ paths: [String]) async throws
}

extension SecretServiceClient: SecretServiceBackend {}
