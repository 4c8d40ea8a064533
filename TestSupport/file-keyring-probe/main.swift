// file-keyring-probe: a second process for FileKeyringTests.
//
//   file-keyring-probe add PATH PREFIX COUNT
//       COUNT transactions, each appending the item PREFIX-i (attributes probe=PREFIX, n=i,
//       secret "secret-PREFIX-i").
//   file-keyring-probe hold PATH READY RELEASE
//       one transaction that creates the file READY while it holds the lock, waits (at most 60 s)
//       until the file RELEASE exists, then appends the item "held".
//
// The master secret comes from the environment variable FILE_KEYRING_PROBE_SECRET (never argv).
// Exit status 0 on success; 1 with the error on stderr otherwise; 2 for bad usage.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import FileKeyring

func fail(_ message: String, status: Int32 = 1) -> Never {
    let line = Array("file-keyring-probe: \(message)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    exit(status)
}

func fileExists(_ path: String) -> Bool {
    access(path, F_OK) == 0
}

let arguments = CommandLine.arguments
guard arguments.count == 5 else { fail("usage: file-keyring-probe add PATH PREFIX COUNT | hold PATH READY RELEASE", status: 2) }
guard let secretVariable = getenv("FILE_KEYRING_PROBE_SECRET") else { fail("FILE_KEYRING_PROBE_SECRET is not set", status: 2) }
let masterSecret = FileKeyringSecret(utf8: String(cString: secretVariable))

do {
    let keyring = try FileKeyring(path: arguments[2], masterSecret: masterSecret, lockTimeout: .seconds(60))
    switch arguments[1] {
    case "add":
        let prefix = arguments[3]
        guard let count = Int(arguments[4]) else { fail("COUNT must be a number", status: 2) }
        for index in 0..<count {
            try keyring.modify { items throws(FileKeyringError) in
                items.append(FileKeyringItem(
                    label: "\(prefix)-\(index)", attributes: ["probe": prefix, "n": "\(index)"],
                    secret: FileKeyringSecret(utf8: "secret-\(prefix)-\(index)")))
            }
        }
    case "hold":
        let (ready, release) = (arguments[3], arguments[4])
        try keyring.modify { items throws(FileKeyringError) in
            let fd = open(ready, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw FileKeyringError.aborted("cannot create \(ready)") }
            close(fd)
            var waited = 0
            while !fileExists(release) {
                guard waited < 60_000 else { throw FileKeyringError.aborted("\(release) never appeared") }
                usleep(5_000)
                waited += 5
            }
            items.append(FileKeyringItem(label: "held", attributes: ["probe": "hold"], secret: FileKeyringSecret(utf8: "held")))
        }
    default:
        fail("unknown command \(arguments[1])", status: 2)
    }
} catch {
    fail("\(error)")
}
