#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import FileKeyring
internal import Gcrypt
import Locking

/// The host deletions of a move into the sandbox (``HostMigration``), made after the copy and
/// recorded in the marker until they are made, so that a move interrupted between them finishes
/// at a later start instead of leaving the app's own items on the host for good.
extension HostMigration {
    /// What the marker's secret records: the host deletions still to make, and the host items left
    /// there because they changed after they were copied. JSON; a marker written before this record
    /// existed (an empty secret), or one that does not parse, records nothing: nothing is deleted on
    /// its word.
    struct MoveRecord: Codable, Sendable, Equatable {
        /// One of the app's own host items, copied in, to delete on the host.
        struct Deletion: Codable, Sendable, Hashable {
            /// Its object path on the host.
            var path: String
            /// SHA-256 (hex) of its attributes and secret as copied (``digest(attributes:secret:)``):
            /// a host item that no longer has it changed after the copy, and is not deleted.
            var digest: String
        }

        var pending: [Deletion]
        /// Paths of host items that had changed since they were copied: left on the host.
        var left: [String]

        init(pending: [Deletion], left: [String]) {
            self.pending = pending
            self.left = left
        }

        /// The record a marker's secret holds. Read with bounds: the file is shared with every
        /// process of the app and with libsecret, so anything may be there.
        init(_ secret: FileKeyringSecret) {
            let bytes = secret.copiedData()
            let limit = 10_000
            guard bytes.count <= 4 << 20, let record = try? JSONDecoder().decode(MoveRecord.self, from: bytes),
                  record.pending.count <= limit, record.left.count <= limit,
                  record.pending.allSatisfy({ $0.path.utf8.count <= 4096 && $0.digest.utf8.count == 64 }) else {
                self.init(pending: [], left: [])
                return
            }
            self = record
        }

        /// The record as a marker's secret.
        var secret: FileKeyringSecret {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            return FileKeyringSecret(copying: (try? encoder.encode(self)) ?? Data())
        }

        /// SHA-256 (hex) of an item's attributes (sorted, each `name`, NUL, `value`, NUL) and its
        /// secret: what a host item must still be to be deleted as copied.
        static func digest(attributes: [String: String], secret: Data) -> String {
            var bytes: [UInt8] = []
            for (name, value) in attributes.sorted(by: { $0.key < $1.key }) {
                bytes += Array(name.utf8) + [0] + Array(value.utf8) + [0]
            }
            bytes += [0] + Array(secret)
            defer { for index in bytes.indices { bytes[index] = 0 } }
            return bytes.withUnsafeBytes { Hashing.sha256($0) }.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        }
    }

    /// Makes the recorded host deletions: each item still as it was copied is deleted; one that is
    /// gone is done; one that changed is left and reported; one whose deletion fails stays
    /// recorded. Then records what is left to do, in one transaction of the file.
    func completeDeletions(_ pending: [MoveRecord.Deletion]) async throws(FileKeyringError) -> Deletions {
        var result = Deletions()
        var done = Set<String>()
        for (index, deletion) in pending.enumerated() {
            switch await host.delete(deletion, by: deadline) {
            case .deleted:
                result.moved += 1
                done.insert(deletion.path)
            case .gone:
                done.insert(deletion.path)
            case .changed:
                Log.warning("Moving into the sandbox: the app's host item \(deletion.path) changed after it was copied in; "
                    + "it stays on the host")
                result.left.append(deletion.path)
                done.insert(deletion.path)
            case .failed(let error):
                Log.warning("Moving into the sandbox: the app's item \(deletion.path) stays on the host for now", error: error)
                result.pending += 1
            }
            reached(2 + index)
        }
        let (left, isMarker, finished) = (result.left, self.isMarker, done)
        _ = try await keyring.modify(by: deadline.instant) { items throws(FileKeyringError) -> Void? in
            guard let index = items.firstIndex(where: { isMarker($0) }) else { return nil }
            var record = MoveRecord(items[index].secret)
            record.pending.removeAll { finished.contains($0.path) }
            record.left += left.filter { !record.left.contains($0) }
            items[index].secret = record.secret
            return ()
        }
        return result
    }

    /// What a host deletion did.
    enum DeletionResult: Sendable {
        /// Deleted now.
        case deleted
        /// Already gone (deleted by a move before, or by the user).
        case gone
        /// Changed since it was copied: left on the host.
        case changed
        /// Not deleted now (the host locked, say): tried again by the next start.
        case failed(KeychainError)
    }
}
