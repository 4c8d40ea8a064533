// Generated from README.md's ```swift blocks by `swift run readme-snippets --write`: do not edit.
// ReadmeSnippetTests fails when this file differs from what README.md generates now, and the
// target does not build when a block stops compiling. See TestSupport/readme-snippets/main.swift.
import Foundation
import PingStorage
#if canImport(PingStorageLinux)
import PingStorageLinux
#else
import PingStorage
#endif

// README.md, the block at line 73
enum ReadmeBlock1 {
#sourceLocation(file: "README.md", line: 75)

// Define the custom data to store
struct Dog: Codable {
    let name: String
    let breed: String
}
#sourceLocation()
static func run() async throws {
#sourceLocation(file: "README.md", line: 81)
// Create custom storage for custom data
let customStorage = KeychainStorage<Dog>(account: "myStorageId")
#sourceLocation()
#sourceLocation(file: "README.md", line: 83)
// Persist custom data
try await customStorage.save(item: Dog(name: "Lucky", breed: "Golden Retriever"))
#sourceLocation()
#sourceLocation(file: "README.md", line: 85)
// Retrieve custom data (the iOS page's `try?` compiles too, but would turn a locked keyring into nil)
let storedData = try await customStorage.get()
#sourceLocation()
#sourceLocation(file: "README.md", line: 87)
print(storedData?.name ?? "no dog stored")
#sourceLocation()
}

// README.md, the block at line 93
enum ReadmeBlock2 {
static func run() async throws {
#sourceLocation(file: "README.md", line: 93)
// A copy in memory: a get after a save does not go to the keyring.
let cachedStorage = KeychainStorage<Dog>(account: "myCachedStorageId", cacheable: true)
#sourceLocation()
#sourceLocation(file: "README.md", line: 95)
try await cachedStorage.save(item: Dog(name: "Lucky", breed: "Golden Retriever"))
#sourceLocation()
#sourceLocation(file: "README.md", line: 96)
// The item's JSON is encrypted with AES-256-GCM under a key kept in the keyring.
let encryptedStorage = KeychainStorage<Dog>(account: "myEncryptedStorageId",
                                            encryptor: SecuredKeyEncryptor() ?? NoEncryptor())
#sourceLocation()
#sourceLocation(file: "README.md", line: 99)
try await encryptedStorage.save(item: Dog(name: "Rex", breed: "Beagle"))
#sourceLocation()
}

// README.md, the block at line 105
enum ReadmeBlock3 {
#sourceLocation(file: "README.md", line: 105)
/// Encrypts every save with SecuredKeyEncryptor, and still reads items that were saved as plain
/// JSON (an object or an array) before the app turned encryption on.
struct MigratingEncryptor: Encryptor {
    let encryptor: any Encryptor = SecuredKeyEncryptor() ?? NoEncryptor()
    func encrypt(data: Data) async throws -> Data {
        try await encryptor.encrypt(data: data)
    }
    func decrypt(data: Data) async throws -> Data {
        if data.first == UInt8(ascii: "{") || data.first == UInt8(ascii: "[") { return data }
        return try await encryptor.decrypt(data: data)
    }
}
#sourceLocation()
static func run() async throws {
#sourceLocation(file: "README.md", line: 117)

let migratedStorage = KeychainStorage<Dog>(account: "myStorageId", encryptor: MigratingEncryptor())
#sourceLocation()
#sourceLocation(file: "README.md", line: 119)
if let dog = try await migratedStorage.get() {
    try await migratedStorage.save(item: dog)   // saved again, now encrypted
}
#sourceLocation()
}

// README.md, the block at line 128
enum ReadmeBlock4 {
#sourceLocation(file: "README.md", line: 128)
/// Keeps the item as a JSON file: for data that is not secret.
struct FileStorage<T: Codable & Sendable>: Storage {
    let url: URL
    func save(item: T) async throws {
        try JSONEncoder().encode(item).write(to: url, options: .atomic)
    }
    func get() async throws -> T? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try JSONDecoder().decode(T.self, from: Data(contentsOf: url))
    }
    func delete() async throws {
        guard FileManager.default.fileExists(atPath: url.path) else { return }
        try FileManager.default.removeItem(at: url)
    }
}
#sourceLocation()
#sourceLocation(file: "README.md", line: 143)

class FileStorageDelegate<T: Codable & Sendable>: StorageDelegate<T>, @unchecked Sendable {
    init(url: URL, cacheable: Bool = false) {
        super.init(delegate: FileStorage<T>(url: url), cacheable: cacheable)
    }
}
#sourceLocation()
static func run() async throws {
#sourceLocation(file: "README.md", line: 149)

let settings = FileStorageDelegate<Dog>(url: FileManager.default.temporaryDirectory.appendingPathComponent("dog.json"), cacheable: true)
#sourceLocation()
#sourceLocation(file: "README.md", line: 151)
try await settings.delete()
#sourceLocation()
}

// README.md, the block at line 213
enum ReadmeBlock5 {
static func run() async throws {
}
}
}
}
}
}
