@testable import FileKeyring
import Foundation
import PingStorage
import Testing

/// A damaged record in the sandbox's file keyring (issue 25), as the app's processes meet it:
/// `ping-keyring doctor` names it and the other checks go on, `get` of its account is a corrupt
/// item (exit 4), another account saves, and libsecret's `secret-tool clear` (the fix the doctor
/// gives) removes it.
extension SandboxIntegration.FileKeyringThroughThePortal {
    @Test func theDoctorNamesADamagedRecordAndTheOtherAccountsGoOn() async throws {
        let damagedAccount = uniqueAccount("damaged")
        let keyring = try await SandboxIntegration.fileKeyring()
        // A sound record beside it: were every record damaged, it would be the wrong master secret.
        let intact = ["service": defaultService, "account": uniqueAccount("intact")]
        try keyring.store(label: "intact", attributes: intact, secret: FileKeyringSecret(utf8: "\"i\""))
        try keyring.store(label: "damaged", attributes: ["service": defaultService, "account": damagedAccount],
                          secret: FileKeyringSecret(utf8: "\"d\""))
        let path = Harness.sandboxKeyring
        var file = try KeyringFile(parsing: #require(try POSIX.readFile(path)), path: path)
        let index = try #require(file.records.lastIndex { $0.hashedAttributes.map(\.name) == ["account", "service"] })
        file.records[index].blob[file.records[index].blob.count - 1] ^= 0x01
        try Data(file.serialized()).write(to: URL(fileURLWithPath: path))
        let damagedRecord = file.records[index]
        defer {
            // The sandbox's keyring is shared by the suite's tests: the record goes, whatever happened.
            if var left = try? KeyringFile(parsing: POSIX.readFile(path) ?? [], path: path), left.records.contains(damagedRecord) {
                left.records.removeAll { $0 == damagedRecord }
                try? Data(left.serialized()).write(to: URL(fileURLWithPath: path))
            }
            _ = try? keyring.remove(matching: intact)
        }
        let record = "record \(index + 1) (it fails its MAC check; hashed attributes: account, service)"

        let doctor = try await runPingKeyring(["doctor"])
        #expect(doctor.status == 4, "\(doctor.output)\(doctor.stderr)")
        let lines = doctor.output.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("FAIL  file keyring       \(path) exists, with ") && $0.hasSuffix(" damaged record: \(record)") },
                "\(doctor.output)")
        #expect(lines.contains { $0.hasPrefix("ok    write/read/delete  wrote, read back and deleted an item") }, "the probe goes on")
        let json = try jsonObject(try await runPingKeyring(["doctor", "--json"]))
        let check = try #require((json["checks"] as? [[String: Any]])?.first { $0["id"] as? String == "fileKeyring" })
        let damaged = try #require(check["damagedRecords"] as? [[String: Any]])
        #expect(damaged.map { $0["record"] as? Int } == [index + 1])
        #expect(damaged.first?["hashedAttributes"] as? [String] == ["account", "service"])

        let got = try await runPingKeyring(["get", "--account", damagedAccount])
        #expect(got.status == 4, "\(got.stderr)")
        #expect(got.stderr.contains("corruptItem") && got.stderr.contains(record), "\(got.stderr)")
        let other = uniqueAccount("beside")
        let saved = try await runPingKeyring(["save", "--account", other], input: Data("\"o\"".utf8))
        #expect(saved.status == 0, "\(saved.stderr)")
        #expect(try await runPingKeyring(["get", "--account", other]).output == "\"o\"\n")
        _ = try await runPingKeyring(["delete", "--account", other])
        let kept = try KeyringFile(parsing: #require(try POSIX.readFile(path)), path: path).records
        #expect(kept.contains(damagedRecord), "written back byte for byte")

        let cleared = try await SandboxIntegration.libsecret(["clear", "service", defaultService, "account", damagedAccount])
        #expect(cleared.status == 0, "\(cleared.stderr)")
        #expect(try keyring.contents().damaged.isEmpty, "secret-tool clear removed it")
    }
}
