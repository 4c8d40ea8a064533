// libFuzzer harness: the Secret portal's answers (SecretPortal.swift).
//
// The first byte chooses what the input is:
// - 0 mod 3: the Response signal's body, `(ua{sv})`, as the bus delivers it (a GVariant built
//   with g_variant_new_from_bytes, trusted = FALSE, not normalised), read as portalSecret() reads
//   it (expecting, the response code, and the results dictionary);
// - 1 mod 3: the RetrieveSecret reply, `(o)`: the request handle compared with ours;
// - 2 mod 3: the secret, written into a pipe in chunks whose sizes the next byte picks, read by
//   the client's PipeReader (on GLib's loop thread, as in portalSecret()) to the end: the bytes
//   read must be those written, and more than PipeReader's limit must be refused.
import CGLib
#if canImport(Glibc)
import Glibc
#endif
@testable import DBusTransport
@testable import SecretService

/// Only for its deadlines (no bus is touched): PipeReader's ends 20 s from its start.
let client = SecretServiceClient(options: .init(timeout: .seconds(20)))
let request = "/org/freedesktop/portal/desktop/request/1_42/secretservice_1"

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    // PipeReader closes its end as soon as more than its limit has arrived, possibly before the
    // writer below is done: the writer's next write must fail with EPIPE, not kill the process
    // (SIGPIPE's default; CI's run died so, exit status 141, on an input over the limit).
    signal(SIGPIPE, SIG_IGN)
    // Lazy one-time initialisations (globals, GLib's type caches) happen here, not in the first
    // input, whose unfreed allocations libFuzzer would report as a leak.
    if let directory = getenv("FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) {
        writeSeeds(to: directory)
        exit(0)
    }
    for first in 0..<3 { _ = [UInt8(first), 0, 0, 0, 0, 0, 0, 0].withUnsafeBufferPointer { fuzzPortal($0.baseAddress, $0.count) } }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPortal(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data, size > 0 else { return 0 }
    let input = UnsafeBufferPointer(start: data + 1, count: size - 1)
    switch data[0] % 3 {
    case 0:
        let answer = variant(input, "(ua{sv})")
        guard let checked = try? answer.expecting("(ua{sv})", in: "fuzz") else { fatalError("not a (ua{sv})") }
        _ = checked.child(0).uint32
        _ = checked.child(1).lookup("uri", "s")?.string
    case 1:
        _ = variant(input, "(o)").child(0).string == request
    default:
        readThroughPipe(input)
    }
    return 0
}

func variant(_ input: UnsafeBufferPointer<UInt8>, _ type: StaticString) -> Variant {
    let bytes = g_bytes_new(input.baseAddress, gsize(input.count))
    defer { g_bytes_unref(bytes) }
    return Variant(retaining: g_variant_new_from_bytes(variantType(type), bytes, 0)!)
}

/// What one PipeReader read: set from its task, waited for on the fuzzer's thread.
final class Outcome: @unchecked Sendable {
    var result: Result<[UInt8], SecretServiceError>?
    let done = DispatchSemaphoreLike()
}

func readThroughPipe(_ input: UnsafeBufferPointer<UInt8>) {
    guard let chunking = input.first else { return }
    let secret = Array(input.dropFirst())
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { fatalError("pipe: errno \(errno)") }
    _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
    let reader = PipeReader(descriptor: ends[0], operation: "fuzz", deadline: client.callDeadline())
    let outcome = Outcome()
    Task.detached {
        do throws(SecretServiceError) { outcome.result = .success(try await reader.bytes()) } catch { outcome.result = .failure(error) }
        outcome.done.signal()
    }
    // The writer: chunks of 1 to 256 bytes (the pipe's buffer holds 64 KiB: no write blocks).
    // PipeReader may refuse (and close) once more than its limit has been read, never before.
    let step = Int(chunking) + 1
    var offset = 0
    while offset < secret.count {
        let count = min(step, secret.count - offset)
        let written = secret.withUnsafeBytes { write(ends[1], $0.baseAddress! + offset, count) }
        if written < 0, errno == EPIPE, offset > PipeReader.Collected.limit { break }
        guard written == count else { fatalError("write: errno \(errno) after \(offset) bytes") }
        offset += count
    }
    close(ends[1])
    outcome.done.wait()
    switch outcome.result {
    case .success(let bytes)?:
        guard secret.count <= PipeReader.Collected.limit, bytes == secret else {
            fatalError("PipeReader read \(bytes.count) bytes where \(secret.count) were written")
        }
    case .failure(let error)?:
        guard secret.count > PipeReader.Collected.limit, error.code == .protocolError else {
            fatalError("PipeReader failed on \(secret.count) bytes: \(error)")
        }
    case nil:
        fatalError("no outcome")
    }
}

/// A counting semaphore on a pthread mutex and condition (the fuzzer's thread waits on it; it is
/// not one of Swift's cooperative threads).
final class DispatchSemaphoreLike: @unchecked Sendable {
    private var mutex = pthread_mutex_t()
    private var condition = pthread_cond_t()
    private var count = 0
    init() {
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&condition, nil)
    }
    func signal() {
        pthread_mutex_lock(&mutex)
        count += 1
        pthread_cond_signal(&condition)
        pthread_mutex_unlock(&mutex)
    }
    func wait() {
        pthread_mutex_lock(&mutex)
        while count == 0 { pthread_cond_wait(&condition, &mutex) }
        count -= 1
        pthread_mutex_unlock(&mutex)
    }
}


/// The portal's answers as xdg-desktop-portal sends them, and secrets as its GNOME Keyring
/// backend writes them (64 bytes), none, and one too long.
func writeSeeds(to directory: String) {
    func write(_ name: String, _ bytes: [UInt8]) {
        let file = fopen("\(directory)/\(name)", "wb")!
        _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
    }
    func serialized(_ type: StaticString, _ text: String) -> [UInt8] {
        guard let value = g_variant_parse(variantType(type), text, nil, nil, nil) else { fatalError("seed \(text)") }
        defer { g_variant_unref(value) }  // g_variant_parse gives a reference of our own (not floating)
        return Array(UnsafeRawBufferPointer(start: g_variant_get_data(value), count: Int(g_variant_get_size(value))))
    }
    write("response-success", [0] + serialized("(ua{sv})", "(uint32 0, @a{sv} {})"))
    write("response-cancelled", [0] + serialized("(ua{sv})", "(uint32 1, @a{sv} {})"))
    write("response-other", [0] + serialized("(ua{sv})", "(uint32 2, {'reason': <'no backend'>})"))
    write("retrieve-secret-reply", [1] + serialized("(o)", "('\(request)',)"))
    write("secret-64-bytes", [2, 63] + (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
    write("secret-empty", [2, 0])
    // One byte over PipeReader's limit: refused.
    write("secret-over-limit", [2, 255] + (0..<(PipeReader.Collected.limit + 1)).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
    // Over the limit one byte per write (the input as long as -max_len allows): the reader
    // refuses and closes its end while the writer still has thousands of bytes to go.
    write("secret-over-limit-byte-by-byte", [2, 0] + (0..<19_998).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
}
